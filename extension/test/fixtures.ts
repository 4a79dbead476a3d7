/**
 * The messages msdebug/views/status.py builds, as Python wrote them (tests/test_status.py
 * fails when they differ from what Python builds today; MSDEBUG_UPDATE_FIXTURES=1 rewrites
 * them), and the protocol's schema, msdebug/views/status.schema.json.
 */
import messages from './messages.json';
import statusSchema from '../../msdebug/views/status.schema.json';

import type { Schema } from './schema';

export const SCHEMA: Schema = statusSchema;

/** Every message Python wrote, by name (`state`, `reply_ok` ...). */
export const PYTHON_MESSAGES: Record<string, Record<string, unknown>> = messages;

/** A copy of one message Python wrote. */
export function pythonMessage(name: keyof typeof messages): Record<string, unknown> {
  return JSON.parse(JSON.stringify(messages[name]));
}

/** Python's `state` message (PyNative on CPU:0, nothing fixed), with `overrides` in its state. */
export function stateMessage(overrides: Record<string, unknown> = {}, protocol: unknown = 1): Record<string, unknown> {
  const message = pythonMessage('state');
  return { ...message, protocol, state: { ...(message.state as Record<string, unknown>), ...overrides } };
}
