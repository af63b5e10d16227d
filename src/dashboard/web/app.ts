import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { getJson } from './api';
import { fill, h } from './dom';
import { clock } from './format';
import { ClientHistory } from './history';
import { currentRoute } from './router';
import { BucketView } from './views/bucket';
import { JobView } from './views/job';
import { OverviewView } from './views/overview';
import type { WireOverview, WireOverviewWithHistory } from '../wire';

interface View {
  element: HTMLElement;
  update(overview: WireOverview): void;
  dispose(): void;
}

const viewRoot = document.getElementById('view')!;
const status = document.getElementById('status')!;
let overview: WireOverview | undefined;
let history = new ClientHistory(3600, 1000);
let view: View | undefined;

function setStatus(state: 'live' | 'lost' | 'error', text: string): void {
  status.dataset.state = state;
  status.textContent = text;
}

/** Draws the view the URL's hash names; the overview's figures fill it at once, later ones update it. */
function show(): void {
  view?.dispose();
  const route = currentRoute();
  const writes = overview?.writes ?? false;
  const refresh = () => void reload();
  if (route.view === 'bucket') view = new BucketView(route.throttle, route.keyText, writes);
  else if (route.view === 'job') view = new JobView(route.queue, route.id, overview?.queues.map((q) => q.queue) ?? []);
  else view = new OverviewView(history, writes, refresh);
  document.body.dataset.view = route.view;
  document.body.dataset.writes = String(writes);
  fill(viewRoot, view.element);
  if (overview) view.update(overview);
}

function received(next: WireOverview): void {
  overview = next;
  history.append(next);
  if (next.error) setStatus('error', next.error);
  else setStatus('live', `live · ${clock(next.at)} (Redis clock)`);
  view?.update(next);
}

/** The whole overview with the server's history: at start, and after a write, so that its effect shows at once. */
async function reload(): Promise<void> {
  const first = await getJson<WireOverviewWithHistory>('overview');
  history = new ClientHistory(first.historySamples, first.sampleEveryMs);
  history.seed(first.history, first.flowHistory);
  const writesChanged = overview?.writes !== first.writes;
  overview = first;
  if (writesChanged || !view) show();
  // The overview view reads the history it was built with.
  else if (view instanceof OverviewView) show();
  received(first);
}

/** Server-sent events, about one a second; the browser reconnects by itself when the stream breaks. */
function listen(): void {
  const events = new EventSource('api/events');
  events.addEventListener('overview', (event) => received(JSON.parse((event as MessageEvent<string>).data) as WireOverview));
  events.addEventListener('error', () => setStatus('lost', 'connection lost: reconnecting…'));
}

window.addEventListener('hashchange', show);
reload()
  .catch((error: Error) => {
    setStatus('error', error.message);
    fill(viewRoot, h('p', { class: 'error', role: 'alert' }, `cannot read the dashboard's data: ${error.message}`));
  })
  .finally(listen);
