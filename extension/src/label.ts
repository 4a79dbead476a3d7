/**
 * The status item's text and tooltip. Pure.
 */

import { ItemState } from './state';

/** The parts of the label a person can choose in the settings (schema/plugin.json). */
export const FIELDS = ['version', 'mode', 'device', 'sync', 'capture', 'runtime', 'parallel', 'ranks'] as const;
export type Field = (typeof FIELDS)[number];

/** The parts shown when the settings do not say. */
export const DEFAULT_FIELDS: readonly Field[] = ['version', 'mode', 'device', 'sync', 'capture', 'parallel', 'ranks'];

/** What the item shows. */
export interface ILabel {
  text: string;
  title: string;
  /** Greyed out: the kernel has no msdebug, no MindSpore, or cannot be read. */
  greyed: boolean;
}

const SEPARATOR = ' · ';
const FIXED = ' (fixed)';

/** `2.10` from `2.10.0rc1`: the status bar is narrow, the tooltip has the whole version. */
export function shortVersion(version: string): string {
  const match = /^(\d+)\.(\d+)/.exec(version);
  return match ? `${match[1]}.${match[2]}` : version;
}

/** `msrun: 2 ranks (busy: 0, 1)`, or "" when %msrun runs none. */
export function ranksText(ranks: readonly number[], busy: readonly number[]): string {
  if (!ranks.length) {
    return '';
  }
  const count = `msrun: ${ranks.length} rank${ranks.length === 1 ? '' : 's'}`;
  return busy.length ? `${count} (busy: ${busy.join(', ')})` : count;
}

/** The tooltip's line on the ranks: each one, busy or idle. */
function ranksTitle(ranks: readonly number[], busy: readonly number[]): string {
  const each = ranks.map(rank => `rank ${rank} ${busy.includes(rank) ? 'busy' : 'idle'}`);
  return `msrun: ${each.join(', ')}`;
}

/** Only the known fields, in the order given, each once; the defaults when none is left. */
export function chooseFields(wanted: unknown): Field[] {
  if (!Array.isArray(wanted)) {
    return [...DEFAULT_FIELDS];
  }
  const chosen: Field[] = [];
  for (const name of wanted) {
    if ((FIELDS as readonly unknown[]).includes(name) && !chosen.includes(name as Field)) {
      chosen.push(name as Field);
    }
  }
  return chosen.length ? chosen : [...DEFAULT_FIELDS];
}

/** The label for `state`, with `fields` in that order. */
export function label(state: ItemState, fields: readonly Field[] = DEFAULT_FIELDS): ILabel {
  switch (state.phase) {
    case 'none':
      return { text: '', title: '', greyed: true };
    case 'waiting':
      return {
        text: 'MindSpore: msdebug not loaded',
        title: 'msdebug is not loaded in this kernel. Run %load_ext msdebug to see and steer MindSpore here.',
        greyed: true
      };
    case 'unusable':
      return { text: 'MindSpore: ?', title: `msdebug: ${state.problem}`, greyed: true };
  }
  const status = state.status;
  if (status.mindspore === null) {
    const installed = status.installed ? `MindSpore ${shortVersion(status.installed)}` : 'MindSpore';
    const parts: string[] = [`${installed} not imported`];
    if (fields.includes('capture')) {
      parts.push(`print capture ${status.printCapture ? 'on' : 'off'}`);
    }
    const ranks = ranksText(status.ranks, status.busyRanks);
    if (fields.includes('ranks') && ranks) {
      parts.push(ranks);
    }
    const title = status.installed
      ? `The kernel has not imported MindSpore ${status.installed} yet. Click for actions.`
      : 'MindSpore is not installed in this kernel.';
    return {
      text: parts.join(SEPARATOR),
      title: status.ranks.length ? `${title}\n${ranksTitle(status.ranks, status.busyRanks)}` : title,
      greyed: true
    };
  }
  const parts: string[] = [];
  for (const field of fields) {
    switch (field) {
      case 'version':
        parts.push(`MindSpore ${shortVersion(status.mindspore)}`);
        break;
      case 'mode':
        parts.push(status.mode);
        break;
      case 'device':
        parts.push(status.device + (status.deviceFixed ? FIXED : ''));
        break;
      case 'sync':
        parts.push(`sync ${status.sync ? 'on' : 'off'}` + (status.syncFixed ? FIXED : ''));
        break;
      case 'capture':
        parts.push(`print capture ${status.printCapture ? 'on' : 'off'}`);
        break;
      case 'runtime':
        parts.push(status.runtimeStarted ? 'runtime started' : 'runtime not started');
        break;
      case 'parallel':
        if (status.parallelMode && status.parallelMode !== 'stand_alone') {
          parts.push(status.parallelMode);
        }
        break;
      case 'ranks':
        if (status.ranks.length) {
          parts.push(ranksText(status.ranks, status.busyRanks));
        }
        break;
    }
  }
  const notes = [status.deviceFixed, status.syncFixed].filter(Boolean).map(note => `Fixed: ${note}`);
  const parallel = status.parallelMode ? [`parallel_mode: ${status.parallelMode}`] : [];
  const ranks = status.ranks.length ? [ranksTitle(status.ranks, status.busyRanks)] : [];
  return {
    text: parts.join(SEPARATOR),
    title: [status.summary, ...notes, ...parallel, ...ranks, 'Click for actions.'].join('\n'),
    greyed: false
  };
}
