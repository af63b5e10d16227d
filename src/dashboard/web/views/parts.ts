import { h } from '../dom';
import { formatCount } from '../format';
import type { WireState } from '../../wire';

/** What a card says of each state, beside its colour (and in the legend). */
export const STATE_TEXT: Record<WireState, string> = {
  flowing: 'flowing',
  'at-limit': 'at its limit',
  paused: 'paused',
  recovering: 'recovering',
};

/** A figure with its label under it; `field` names it for the DOM's readers (data-field). */
export function stat(field: string, label: string, value: string | number, title?: string): HTMLElement {
  return h('div', { class: 'stat', title },
    h('span', { class: 'value', 'data-field': field }, typeof value === 'number' ? formatCount(value) : value),
    h('span', { class: 'label' }, label));
}

/** A table in a container of its own that scrolls sideways, so that a narrow screen never clips it. */
export function scrolling(table: HTMLElement): HTMLElement {
  return h('div', { class: 'table-scroll' }, table);
}
