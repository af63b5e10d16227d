import { fill, h } from '../dom';

/**
 * A write's second step: says what the write will do, in words, and runs it only on "Confirm". Inline rather
 * than window.confirm, so that the page goes on updating while someone reads it, and so that it names its
 * target beside the control it came from.
 */
export class ConfirmStep {
  readonly element = h('div', { class: 'confirm', 'data-role': 'confirm', role: 'alertdialog', hidden: true });

  ask(question: string, action: () => void): void {
    const yes = h('button', { type: 'button', class: 'primary', 'data-action': 'confirm', onclick: () => { this.close(); action(); } }, 'Confirm');
    fill(this.element,
      h('span', { 'data-field': 'question' }, question),
      yes,
      h('button', { type: 'button', 'data-action': 'cancel', onclick: () => this.close() }, 'Cancel'));
    this.element.hidden = false;
    yes.focus();
  }

  close(): void {
    this.element.hidden = true;
    this.element.replaceChildren();
  }
}
