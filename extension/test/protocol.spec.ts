import { PROTOCOL, commandMessage, parseMessage } from '../src/protocol';
import { stateMessage } from './fixtures';

describe('parseMessage', () => {
  it('reads a state message into camelCase fields', () => {
    const parsed = parseMessage(stateMessage({ mode: 'GRAPH', print_capture: true, device_fixed: 'started' }));
    expect(parsed.ok).toBe(true);
    if (parsed.ok && parsed.message.kind === 'state') {
      expect(parsed.message.status.mode).toBe('GRAPH');
      expect(parsed.message.status.printCapture).toBe(true);
      expect(parsed.message.status.deviceFixed).toBe('started');
      expect(parsed.message.status.mindspore).toBe('2.10.0');
    } else {
      throw new Error('not a state message');
    }
  });

  it('accepts null for a MindSpore that is not imported', () => {
    const parsed = parseMessage(stateMessage({ mindspore: null }));
    expect(parsed.ok && parsed.message.kind === 'state' && parsed.message.status.mindspore).toBe(null);
  });

  it('ignores fields it does not know (a newer kernel of the same protocol may add some)', () => {
    expect(parseMessage(stateMessage({ precision_mode: 'fp16' })).ok).toBe(true);
  });

  it('refuses another protocol version and says which side is newer', () => {
    const newer = parseMessage(stateMessage({}, PROTOCOL + 1));
    expect(newer).toEqual({ ok: false, problem: expect.stringContaining('the kernel has the newer one') });
    const older = parseMessage(stateMessage({}, 0));
    expect(older).toEqual({ ok: false, problem: expect.stringContaining('this JupyterLab has the newer one') });
  });

  it('refuses messages without a protocol', () => {
    expect(parseMessage({ kind: 'state' })).toEqual({ ok: false, problem: 'the message has no protocol version' });
    expect(parseMessage(stateMessage({}, '1')).ok).toBe(false);
  });

  it('refuses what is not a JSON object', () => {
    for (const data of [null, 3, 'state', [1]]) {
      expect(parseMessage(data)).toEqual({ ok: false, problem: 'the message is not a JSON object' });
    }
  });

  it('names every missing or mistyped field', () => {
    const message = stateMessage({ sync: 'off' });
    delete (message.state as Record<string, unknown>).device;
    const parsed = parseMessage(message);
    expect(parsed).toEqual({ ok: false, problem: 'bad state message: device is not a string, sync is not true or false' });
  });

  it('reads replies', () => {
    expect(parseMessage({ protocol: 1, kind: 'reply', id: 4, ok: false, error: 'mode: bad' })).toEqual({
      ok: true,
      message: { kind: 'reply', id: 4, ok: false, error: 'mode: bad' }
    });
    expect(parseMessage({ protocol: 1, kind: 'reply', id: '4', ok: true, error: '' }).ok).toBe(false);
  });

  it('refuses unknown kinds', () => {
    expect(parseMessage({ protocol: 1, kind: 'shout' })).toEqual({ ok: false, problem: 'unknown message kind "shout"' });
  });
});

describe('commandMessage', () => {
  it('carries the protocol, an id and the action', () => {
    expect(commandMessage(7, { action: 'set', values: { mode: 'graph' } })).toEqual({
      protocol: PROTOCOL,
      kind: 'command',
      id: 7,
      action: 'set',
      values: { mode: 'graph' }
    });
    expect(commandMessage(8, { action: 'print_capture', value: true })).toEqual({
      protocol: PROTOCOL,
      kind: 'command',
      id: 8,
      action: 'print_capture',
      value: true
    });
  });
});
