/**
 * The messages between msdebug's kernel side (msdebug/ipython/comm.py) and this
 * extension, over one comm whose target is `msdebug`.
 *
 * Pure: no JupyterLab imports, so the unit tests run in node.
 */

/** The comm target the kernel registers when msdebug loads. */
export const COMM_TARGET = 'msdebug';

/** The protocol this front end speaks; the kernel puts its own in every message. */
export const PROTOCOL = 1;

/** What the kernel says about its MindSpore context (`kind: "state"`). */
export interface IKernelStatus {
  /** The imported MindSpore's version, or null while the kernel has not imported it. */
  mindspore: string | null;
  /** The installed MindSpore's version, or null where none is installed. */
  installed: string | null;
  /** `GRAPH` or `PYNATIVE` (`?` for a mode this front end does not know). */
  mode: string;
  /** `CPU:0`. */
  device: string;
  /** Why the device cannot change any more in this process, or "". */
  deviceFixed: string;
  /** Whether PyNative execution is synchronous. */
  sync: boolean;
  /** Why synchronous execution cannot be turned off any more, or "". */
  syncFixed: string;
  /** Whether the runtime of the device has started. */
  runtimeStarted: boolean;
  /** Whether msdebug captures every cell's Print output. */
  printCapture: boolean;
  /** The one-line summary the context table and the panel show. */
  summary: string;
  /** Code to make the first cell of a fresh kernel, to get this device there. */
  firstCell: string;
  /** `set_auto_parallel_context`'s `parallel_mode` (`stand_alone` unless set), or "" before the import. */
  parallelMode: string;
  /** The ranks `%msrun` started on this host, in order; empty when none run. */
  ranks: number[];
  /** Those of `ranks` that run a cell now. */
  busyRanks: number[];
}

/** A message from the kernel, once checked. */
export type KernelMessage =
  | { kind: 'state'; status: IKernelStatus }
  | { kind: 'reply'; id: number; ok: boolean; error: string };

/** The outcome of reading one message: the message, or why it was refused. */
export type Parsed = { ok: true; message: KernelMessage } | { ok: false; problem: string };

/** The actions the front end asks the kernel for. */
export type Action =
  | { action: 'set'; values: Record<string, string> }
  | { action: 'print_capture'; value: boolean };

/** A command message, as sent to the kernel. */
export interface ICommand {
  protocol: number;
  kind: 'command';
  id: number;
  action: string;
  values?: Record<string, string>;
  value?: boolean;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(data: Json, name: string, problems: string[]): string {
  const value = data[name];
  if (typeof value !== 'string') {
    problems.push(`${name} is not a string`);
    return '';
  }
  return value;
}

function textOrNull(data: Json, name: string, problems: string[]): string | null {
  const value = data[name];
  if (value === null) {
    return null;
  }
  return text(data, name, problems);
}

function flag(data: Json, name: string, problems: string[]): boolean {
  const value = data[name];
  if (typeof value !== 'boolean') {
    problems.push(`${name} is not true or false`);
    return false;
  }
  return value;
}

function integers(data: Json, name: string, problems: string[]): number[] {
  const value = data[name];
  if (!Array.isArray(value) || !value.every(item => typeof item === 'number' && Number.isInteger(item))) {
    problems.push(`${name} is not a list of whole numbers`);
    return [];
  }
  return value as number[];
}

function parseStatus(data: unknown): IKernelStatus | string {
  if (!isObject(data)) {
    return 'state is not an object';
  }
  const problems: string[] = [];
  const status: IKernelStatus = {
    mindspore: textOrNull(data, 'mindspore', problems),
    installed: textOrNull(data, 'installed', problems),
    mode: text(data, 'mode', problems),
    device: text(data, 'device', problems),
    deviceFixed: text(data, 'device_fixed', problems),
    sync: flag(data, 'sync', problems),
    syncFixed: text(data, 'sync_fixed', problems),
    runtimeStarted: flag(data, 'runtime_started', problems),
    printCapture: flag(data, 'print_capture', problems),
    summary: text(data, 'summary', problems),
    firstCell: text(data, 'first_cell', problems),
    parallelMode: text(data, 'parallel_mode', problems),
    ranks: integers(data, 'ranks', problems),
    busyRanks: integers(data, 'busy_ranks', problems)
  };
  return problems.length ? problems.join(', ') : status;
}

/**
 * Check one message from the kernel.
 *
 * Fields this front end does not know are ignored (a newer kernel may add some); a
 * message of another protocol version, or one that lacks a field, is refused with the
 * reason, so the caller can say so instead of showing something wrong.
 */
export function parseMessage(data: unknown): Parsed {
  if (!isObject(data)) {
    return { ok: false, problem: 'the message is not a JSON object' };
  }
  const protocol = data.protocol;
  if (typeof protocol !== 'number' || !Number.isInteger(protocol)) {
    return { ok: false, problem: 'the message has no protocol version' };
  }
  if (protocol !== PROTOCOL) {
    const newer = protocol > PROTOCOL ? 'the kernel' : 'this JupyterLab';
    return {
      ok: false,
      problem:
        `the kernel's msdebug speaks protocol ${protocol} and this JupyterLab extension speaks ` +
        `${PROTOCOL}; install the same msdebug version in both (${newer} has the newer one)`
    };
  }
  if (data.kind === 'state') {
    const status = parseStatus(data.state);
    return typeof status === 'string'
      ? { ok: false, problem: `bad state message: ${status}` }
      : { ok: true, message: { kind: 'state', status } };
  }
  if (data.kind === 'reply') {
    const { id, ok, error } = data;
    if (typeof id !== 'number' || typeof ok !== 'boolean' || typeof error !== 'string') {
      return { ok: false, problem: 'bad reply message: it needs id, ok and error' };
    }
    return { ok: true, message: { kind: 'reply', id, ok, error } };
  }
  return { ok: false, problem: `unknown message kind ${JSON.stringify(data.kind)}` };
}

/** The message that asks the kernel for `action`. */
export function commandMessage(id: number, action: Action): ICommand {
  return { protocol: PROTOCOL, kind: 'command', id, ...action };
}
