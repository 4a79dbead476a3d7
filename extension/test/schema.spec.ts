/**
 * protocol.ts against the protocol's one description, msdebug/views/status.schema.json, and
 * against the messages Python wrote (test/messages.json): every field the schema names is
 * read, with the type the schema gives it, and nothing else is required.
 */
import { PROTOCOL, commandMessage, parseMessage } from '../src/protocol';
import { PYTHON_MESSAGES, SCHEMA, pythonMessage, stateMessage } from './fixtures';
import { Schema, resolve, validate } from './schema';

const STATE = resolve(SCHEMA, '#/$defs/state');
const FIELDS = (STATE.properties as Record<string, Schema>).state;
const FIELD_TYPES = FIELDS.properties as Record<string, { type: string | string[] }>;
const REPLY = resolve(SCHEMA, '#/$defs/reply');

function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

function types(name: string): string[] {
  const type = FIELD_TYPES[name].type;
  return Array.isArray(type) ? type : [type];
}

/** A value of each JSON type, to try in every field. */
const SAMPLES: Record<string, unknown> = { string: 'x', boolean: true, integer: 7, null: null, object: {}, array: [] };

describe('the messages Python wrote', () => {
  it('are there, one of each kind', () => {
    const kinds = Object.values(PYTHON_MESSAGES).map(message => message.kind);
    expect(new Set(kinds)).toEqual(new Set(['state', 'reply']));
  });

  it.each(Object.keys(PYTHON_MESSAGES))('%s is valid under the schema and parses', name => {
    const message = PYTHON_MESSAGES[name];
    expect(validate(message, SCHEMA)).toEqual([]);
    const parsed = parseMessage(message);
    expect(parsed).toMatchObject({ ok: true, message: { kind: message.kind } });
  });

  it.each(Object.keys(PYTHON_MESSAGES).filter(name => PYTHON_MESSAGES[name].kind === 'state'))(
    '%s: every field of the schema arrives under its own name, and no other',
    name => {
      const message = PYTHON_MESSAGES[name];
      const parsed = parseMessage(message);
      if (!(parsed.ok && parsed.message.kind === 'state')) {
        throw new Error(`${name} did not parse as a state`);
      }
      const expected = Object.fromEntries(
        Object.entries(message.state as Record<string, unknown>).map(([field, value]) => [camel(field), value])
      );
      expect(parsed.message.status).toEqual(expected);
    }
  );

  it('replies arrive as Python wrote them', () => {
    for (const name of ['reply_ok', 'reply_error', 'reply_without_id'] as const) {
      const { protocol, ...reply } = pythonMessage(name);
      expect(protocol).toBe(PROTOCOL);
      expect(parseMessage(pythonMessage(name))).toEqual({ ok: true, message: reply });
    }
  });
});

describe('protocol.ts reads what the schema says', () => {
  it('speaks the schema protocol version', () => {
    expect(resolve(SCHEMA, '#/$defs/protocol')).toMatchObject({ const: PROTOCOL });
    for (const name of Object.keys(PYTHON_MESSAGES)) {
      expect(PYTHON_MESSAGES[name].protocol).toBe(PROTOCOL);
      expect(parseMessage({ ...PYTHON_MESSAGES[name], protocol: PROTOCOL + 1 }).ok).toBe(false);
    }
  });

  it('needs every field the schema requires, and only those', () => {
    const required = FIELDS.required as string[];
    expect(new Set(required)).toEqual(new Set(Object.keys(FIELD_TYPES)));
    for (const field of required) {
      const message = stateMessage();
      delete (message.state as Record<string, unknown>)[field];
      expect(validate(message, SCHEMA)).not.toEqual([]);
      expect(parseMessage(message)).toEqual({ ok: false, problem: expect.stringContaining(field) });
    }
    for (const field of STATE.required as string[]) {
      const message = stateMessage();
      delete message[field];
      expect(parseMessage(message).ok).toBe(false);
    }
  });

  it('takes each field in exactly the types the schema allows', () => {
    for (const field of Object.keys(FIELD_TYPES)) {
      for (const [type, sample] of Object.entries(SAMPLES)) {
        const message = stateMessage({ [field]: sample });
        const allowed = types(field).includes(type);
        expect([field, type, validate(message, SCHEMA).length === 0]).toEqual([field, type, allowed]);
        expect([field, type, parseMessage(message).ok]).toEqual([field, type, allowed]);
      }
    }
  });

  it('needs every field of a reply, each in its type', () => {
    for (const field of REPLY.required as string[]) {
      const message = pythonMessage('reply_ok');
      delete message[field];
      expect([field, parseMessage(message).ok]).toEqual([field, false]);
      const wrong = { ...pythonMessage('reply_ok'), [field]: [] };
      expect([field, parseMessage(wrong).ok]).toEqual([field, false]);
    }
  });

  it('sends commands the schema describes', () => {
    const commands = [
      commandMessage(1, { action: 'set', values: { mode: 'graph' } }),
      commandMessage(2, { action: 'set', values: { mode: 'graph', pynative_synchronize: 'on' } }),
      commandMessage(3, { action: 'print_capture', value: false })
    ];
    for (const command of commands) {
      expect(validate(command, SCHEMA)).toEqual([]);
    }
    expect(validate({ ...commands[0], action: 'reboot' }, SCHEMA)).not.toEqual([]);
  });
});
