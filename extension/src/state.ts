/**
 * What the status item knows about the kernel of the active notebook or console, and
 * how that changes. Pure: every transition is a function of the old state and one event.
 */

import { Action, IKernelStatus, parseMessage } from './protocol';

/** Where the item stands. */
export type ItemState =
  /** No notebook or console is active, or its kernel is gone. */
  | { phase: 'none' }
  /** A kernel is there; msdebug's comm is not open (msdebug not loaded yet, or connecting). */
  | { phase: 'waiting' }
  /** The kernel's msdebug speaks another protocol, or sent something this front end cannot read. */
  | { phase: 'unusable'; problem: string }
  /** The comm is open and the kernel said what its context is. */
  | { phase: 'ready'; status: IKernelStatus };

/** What can happen. */
export type ItemEvent =
  /** Another notebook or console became active, or its kernel changed (restart included). */
  | { type: 'kernel'; present: boolean }
  /** A message arrived on the comm. */
  | { type: 'message'; data: unknown }
  /** The comm closed (msdebug unloaded, the kernel refused it, or the kernel died). */
  | { type: 'closed' };

export const INITIAL: ItemState = { phase: 'none' };

/** The state after `event`. */
export function next(state: ItemState, event: ItemEvent): ItemState {
  switch (event.type) {
    case 'kernel':
      return event.present ? { phase: 'waiting' } : { phase: 'none' };
    case 'closed':
      return state.phase === 'none' ? state : { phase: 'waiting' };
    case 'message': {
      if (state.phase === 'none') {
        return state; // a late message from a kernel that is no longer followed
      }
      const parsed = parseMessage(event.data);
      if (!parsed.ok) {
        return { phase: 'unusable', problem: parsed.problem };
      }
      if (parsed.message.kind === 'state') {
        return { phase: 'ready', status: parsed.message.status };
      }
      return state; // replies do not change what is shown; the kernel pushes the new state
    }
  }
}

/** The menu entries (and commands), in menu order. */
export const ACTIONS = ['mode', 'sync', 'capture', 'panel', 'first-cell'] as const;
export type ActionName = (typeof ACTIONS)[number];

/** Why `name` cannot be used now, or "" when it can. */
export function disabledReason(state: ItemState, name: ActionName): string {
  if (state.phase === 'none') {
    return 'no notebook or console with a kernel is active';
  }
  if (state.phase === 'waiting') {
    return 'msdebug is not loaded in this kernel: run %load_ext msdebug';
  }
  if (state.phase === 'unusable') {
    return state.problem;
  }
  const status = state.status;
  if (name === 'panel' || name === 'capture') {
    return '';
  }
  if (status.mindspore === null) {
    return 'the kernel has not imported MindSpore yet';
  }
  if (name === 'sync' && status.sync && status.syncFixed) {
    return status.syncFixed;
  }
  return '';
}

/** What the kernel must do for `name`, from what the item shows now; null for front-end-only actions. */
export function actionFor(state: ItemState, name: ActionName): Action | null {
  if (state.phase !== 'ready') {
    return null;
  }
  const status = state.status;
  switch (name) {
    case 'mode':
      return { action: 'set', values: { mode: status.mode === 'GRAPH' ? 'pynative' : 'graph' } };
    case 'sync':
      return { action: 'set', values: { pynative_synchronize: status.sync ? 'off' : 'on' } };
    case 'capture':
      return { action: 'print_capture', value: !status.printCapture };
    default:
      return null;
  }
}

/** The menu label of `name` for the current state ("Switch to GRAPH mode"). */
export function actionLabel(state: ItemState, name: ActionName): string {
  const status = state.phase === 'ready' ? state.status : null;
  switch (name) {
    case 'mode':
      if (status && status.mindspore !== null) {
        return `Switch to ${status.mode === 'GRAPH' ? 'PYNATIVE' : 'GRAPH'} mode`;
      }
      return 'Switch MindSpore mode';
    case 'sync':
      if (status && status.mindspore !== null) {
        return `Turn synchronous execution ${status.sync ? 'off' : 'on'}`;
      }
      return 'Switch synchronous execution';
    case 'capture':
      return status ? `Turn print capture ${status.printCapture ? 'off' : 'on'}` : 'Switch print capture';
    case 'panel':
      return 'Open the settings panel in the notebook';
    case 'first-cell':
      return 'Copy a first cell for a fresh kernel';
  }
}

/** The code the "open the settings panel" action runs in a new cell. */
export const PANEL_CELL = '%mscontext --panel';

/** The code the "copy a first cell" action copies. */
export function firstCell(state: ItemState): string {
  if (state.phase === 'ready' && state.status.firstCell) {
    return `%load_ext msdebug\n${state.status.firstCell}`;
  }
  return '%load_ext msdebug\nimport mindspore';
}
