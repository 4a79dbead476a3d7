import { DEFAULT_FIELDS, chooseFields, label, shortVersion } from '../src/label';
import { INITIAL, ItemState, next } from '../src/state';
import { stateMessage } from './fixtures';

function ready(overrides: Record<string, unknown> = {}): ItemState {
  return next({ phase: 'waiting' }, { type: 'message', data: stateMessage(overrides) });
}

describe('label', () => {
  it('reads like the issue says', () => {
    const shown = label(ready({ mode: 'GRAPH', print_capture: true }));
    expect(shown.text).toBe('MindSpore 2.10 · GRAPH · CPU:0 · sync off · print capture on');
    expect(shown.greyed).toBe(false);
    expect(shown.title).toContain('MindSpore 2.10.0 · PYNATIVE');
  });

  it('marks what is fixed for this process and explains it in the tooltip', () => {
    const shown = label(
      ready({ device_fixed: 'the runtime started on CPU:0', sync: true, sync_fixed: 'launch_blocking() was called' })
    );
    expect(shown.text).toBe('MindSpore 2.10 · PYNATIVE · CPU:0 (fixed) · sync on (fixed) · print capture off');
    expect(shown.title).toContain('Fixed: the runtime started on CPU:0');
    expect(shown.title).toContain('Fixed: launch_blocking() was called');
  });

  it('shows the chosen fields in the chosen order', () => {
    expect(label(ready(), ['device', 'mode']).text).toBe('CPU:0 · PYNATIVE');
    expect(label(ready(), ['runtime']).text).toBe('runtime not started');
    expect(label(ready({ runtime_started: true }), ['runtime']).text).toBe('runtime started');
  });

  it('is greyed out until msdebug is loaded, and empty without a kernel', () => {
    expect(label(INITIAL)).toEqual({ text: '', title: '', greyed: true });
    const waiting = label({ phase: 'waiting' });
    expect(waiting.text).toBe('MindSpore: msdebug not loaded');
    expect(waiting.greyed).toBe(true);
  });

  it('is greyed out while MindSpore is not imported', () => {
    const shown = label(ready({ mindspore: null }));
    expect(shown.text).toBe('MindSpore 2.10 not imported · print capture off');
    expect(shown.greyed).toBe(true);
    expect(label(ready({ mindspore: null, installed: null })).title).toBe('MindSpore is not installed in this kernel.');
  });

  it('shows the ranks %msrun runs, and the busy ones', () => {
    const shown = label(ready({ ranks: [0, 1], busy_ranks: [1] }));
    expect(shown.text).toBe('MindSpore 2.10 · PYNATIVE · CPU:0 · sync off · print capture off · msrun: 2 ranks (busy: 1)');
    expect(shown.title).toContain('msrun: rank 0 idle, rank 1 busy');
    expect(label(ready({ ranks: [0, 1], busy_ranks: [] })).text).toContain('· msrun: 2 ranks');
    expect(label(ready({ ranks: [4], busy_ranks: [] }), ['ranks']).text).toBe('msrun: 1 rank');
    expect(label(ready()).text).not.toContain('msrun');
    expect(label(ready({ ranks: [0, 1] }), ['mode']).text).toBe('PYNATIVE');
  });

  it('shows the ranks before MindSpore is imported too', () => {
    const shown = label(ready({ mindspore: null, ranks: [0, 1], busy_ranks: [0, 1] }));
    expect(shown.text).toBe('MindSpore 2.10 not imported · print capture off · msrun: 2 ranks (busy: 0, 1)');
    expect(shown.title).toContain('msrun: rank 0 busy, rank 1 busy');
  });

  it('shows parallel_mode only when it is not stand_alone', () => {
    expect(label(ready({ parallel_mode: 'data_parallel' })).text).toBe(
      'MindSpore 2.10 · PYNATIVE · CPU:0 · sync off · print capture off · data_parallel'
    );
    expect(label(ready({ parallel_mode: 'stand_alone' })).text).not.toContain('stand_alone');
    expect(label(ready({ parallel_mode: 'stand_alone' })).title).toContain('parallel_mode: stand_alone');
  });

  it('refuses ranks that are not whole numbers', () => {
    const parsed = next({ phase: 'waiting' }, { type: 'message', data: stateMessage({ ranks: ['0'] }) });
    expect(parsed.phase).toBe('unusable');
  });

  it('says when the kernel cannot be read', () => {
    const shown = label({ phase: 'unusable', problem: 'protocol 2' });
    expect(shown).toEqual({ text: 'MindSpore: ?', title: 'msdebug: protocol 2', greyed: true });
  });
});

describe('fields and versions', () => {
  it('keeps known fields once, in order; defaults when none is left', () => {
    expect(chooseFields(['mode', 'bogus', 'mode', 'device'])).toEqual(['mode', 'device']);
    expect(chooseFields([])).toEqual([...DEFAULT_FIELDS]);
    expect(chooseFields('mode')).toEqual([...DEFAULT_FIELDS]);
  });

  it('shortens versions to major.minor', () => {
    expect(shortVersion('2.10.0')).toBe('2.10');
    expect(shortVersion('2.7.0rc1')).toBe('2.7');
    expect(shortVersion('dev')).toBe('dev');
  });
});
