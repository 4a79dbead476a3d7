import { INITIAL, ItemState, actionFor, actionLabel, disabledReason, firstCell, next } from '../src/state';
import { pythonMessage, stateMessage } from './fixtures';

function ready(overrides: Record<string, unknown> = {}): ItemState {
  return next(next(INITIAL, { type: 'kernel', present: true }), { type: 'message', data: stateMessage(overrides) });
}

describe('next', () => {
  it('waits for msdebug once a kernel is there, and shows nothing without one', () => {
    expect(next(INITIAL, { type: 'kernel', present: true })).toEqual({ phase: 'waiting' });
    expect(next(ready(), { type: 'kernel', present: false })).toEqual({ phase: 'none' });
  });

  it('is ready after a state message, and follows every later one', () => {
    const first = ready();
    expect(first.phase).toBe('ready');
    const later = next(first, { type: 'message', data: stateMessage({ mode: 'GRAPH' }) });
    expect(later.phase === 'ready' && later.status.mode).toBe('GRAPH');
  });

  it('clears on a kernel restart (a new kernel) and when the comm closes', () => {
    expect(next(ready(), { type: 'kernel', present: true })).toEqual({ phase: 'waiting' });
    expect(next(ready(), { type: 'closed' })).toEqual({ phase: 'waiting' });
    expect(next(INITIAL, { type: 'closed' })).toBe(INITIAL);
  });

  it('ignores late messages when no kernel is followed', () => {
    expect(next(INITIAL, { type: 'message', data: stateMessage() })).toBe(INITIAL);
  });

  it('becomes unusable on a message of another protocol, with the reason', () => {
    const state = next(ready(), { type: 'message', data: stateMessage({}, 2) });
    expect(state.phase).toBe('unusable');
    expect(state.phase === 'unusable' && state.problem).toContain('protocol 2');
  });

  it('keeps the state on a reply (the kernel pushes the new state itself)', () => {
    const before = ready();
    expect(next(before, { type: 'message', data: pythonMessage('reply_ok') })).toBe(before);
  });
});

describe('actions', () => {
  it('switch mode, sync and print capture to the other value', () => {
    expect(actionFor(ready(), 'mode')).toEqual({ action: 'set', values: { mode: 'graph' } });
    expect(actionFor(ready({ mode: 'GRAPH' }), 'mode')).toEqual({ action: 'set', values: { mode: 'pynative' } });
    expect(actionFor(ready(), 'sync')).toEqual({ action: 'set', values: { pynative_synchronize: 'on' } });
    expect(actionFor(ready({ sync: true }), 'sync')).toEqual({ action: 'set', values: { pynative_synchronize: 'off' } });
    expect(actionFor(ready({ print_capture: true }), 'capture')).toEqual({ action: 'print_capture', value: false });
    expect(actionFor(ready(), 'panel')).toBe(null);
    expect(actionFor({ phase: 'waiting' }, 'mode')).toBe(null);
  });

  it('are greyed out without msdebug or MindSpore, and say why', () => {
    expect(disabledReason({ phase: 'waiting' }, 'mode')).toContain('%load_ext msdebug');
    expect(disabledReason(INITIAL, 'panel')).not.toBe('');
    const noMindSpore = ready({ mindspore: null });
    expect(disabledReason(noMindSpore, 'mode')).toBe('the kernel has not imported MindSpore yet');
    expect(disabledReason(noMindSpore, 'sync')).not.toBe('');
    expect(disabledReason(noMindSpore, 'capture')).toBe('');
    expect(disabledReason(noMindSpore, 'panel')).toBe('');
    for (const name of ['mode', 'sync', 'capture', 'panel', 'first-cell'] as const) {
      expect(disabledReason(ready(), name)).toBe('');
    }
  });

  it('cannot turn off synchronous execution fixed by launch_blocking', () => {
    const state = ready({ sync: true, sync_fixed: 'launch_blocking() was called' });
    expect(disabledReason(state, 'sync')).toBe('launch_blocking() was called');
  });

  it('have labels that say what a click does', () => {
    expect(actionLabel(ready(), 'mode')).toBe('Switch to GRAPH mode');
    expect(actionLabel(ready({ mode: 'GRAPH' }), 'mode')).toBe('Switch to PYNATIVE mode');
    expect(actionLabel(ready(), 'sync')).toBe('Turn synchronous execution on');
    expect(actionLabel(ready(), 'capture')).toBe('Turn print capture on');
    expect(actionLabel({ phase: 'waiting' }, 'mode')).toBe('Switch MindSpore mode');
  });

  it('copy a first cell that loads msdebug and chooses the device', () => {
    expect(firstCell(ready())).toBe("%load_ext msdebug\nimport mindspore; mindspore.set_device('CPU', 0)");
  });
});
