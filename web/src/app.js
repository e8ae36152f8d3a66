// The molt web app: conversations (kept in this browser), chat streamed from the proxy's OpenAI
// API, A2UI surfaces rendered by @a2ui/lit, UI actions sent back to the specialist that made the
// surface, what users enter in surfaces kept by the proxy (private values stay here), feedback,
// and the user's memory (memory.js): their id goes with every chat request as OpenAI's `user`.
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog, moltCatalog } from './catalog.js';
import { memoryPanel } from './memory.js';

const STORE = 'molt.conversations';
const $ = (selector) => document.querySelector(selector);
const memory = memoryPanel($('#memory'));

let conversations = load();
let current = null; // the open conversation: {id, title, messages: [{role, content, specialist, turnId, rating, action}]}
let surfaces = null; // its Surfaces

function load() {
  try { return JSON.parse(localStorage.getItem(STORE)) ?? []; } catch { return []; }
}
function save() { localStorage.setItem(STORE, JSON.stringify(conversations)); }

// An answer is A2UI when every line is a server-to-client message; then it is drawn, not printed.
function a2uiMessages(text) {
  const lines = (text ?? '').split('\n').map((l) => l.trim()).filter(Boolean);
  if (!lines.length) return null;
  try {
    const messages = lines.map((l) => JSON.parse(l));
    const kinds = ['createSurface', 'updateComponents', 'updateDataModel', 'deleteSurface'];
    return messages.every((m) => m && m.version && kinds.some((k) => k in m)) ? messages : null;
  } catch { return null; }
}

// The surfaces of one conversation: one processor, so a later answer can update an earlier surface.
class Surfaces {
  constructor(conversationId, onAction) {
    this.conversationId = conversationId;
    this.processor = new MessageProcessor([basicCatalog, moltCatalog], onAction);
    this.components = new Map(); // surfaceId → Map(componentId → component), for private paths
    this.target = null;
    this.processor.onSurfaceCreated((surface) => {
      const host = document.createElement('a2ui-surface');
      host.surface = surface;
      host.dataset.surfaceId = surface.id;
      let timer;
      const keep = () => { clearTimeout(timer); timer = setTimeout(() => this.keep(surface.id), 250); };
      host.addEventListener('input', keep);
      host.addEventListener('change', keep);
      host.addEventListener('click', keep);
      this.target.append(host);
      labelInputs(host);
    });
    this.processor.onSurfaceDeleted((id) => document.querySelector(`a2ui-surface[data-surface-id="${CSS.escape(id)}"]`)?.remove());
  }

  apply(messages, target) {
    this.target = target;
    for (const message of messages) {
      const update = message.updateComponents;
      if (update) {
        const known = this.components.get(update.surfaceId) ?? new Map();
        for (const c of update.components) known.set(c.id, c);
        this.components.set(update.surfaceId, known);
      }
      this.processor.processMessages([message]);
    }
  }

  // Paths bound by inputs inside a Private component: never sent to the proxy, never kept there.
  privatePaths(surfaceId) {
    const known = this.components.get(surfaceId) ?? new Map();
    const paths = [];
    const visit = (id) => {
      const c = known.get(id);
      if (!c) return;
      if (boundPath(c)) paths.push(boundPath(c));
      // the same child references the server follows (molt.ui.a2ui.children_of)
      const tabs = Array.isArray(c.tabs) ? c.tabs.map((t) => t?.child) : [];
      for (const child of [c.child, c.trigger, c.content, ...(Array.isArray(c.children) ? c.children : []), ...tabs]) if (typeof child === 'string') visit(child);
    };
    for (const c of known.values()) if (c.component === 'Private') visit(c.child);
    return paths;
  }

  // What the user entered: the values of the paths inputs bind, {path: value}, private ones left out.
  // Only those: the rest of the data model is the specialist's, and its later updates must not be
  // overwritten by a copy kept before they arrived.
  data(surfaceId) {
    const surface = this.processor.model.getSurface(surfaceId);
    const hidden = this.privatePaths(surfaceId);
    const entered = {};
    for (const c of (this.components.get(surfaceId) ?? new Map()).values()) {
      const path = boundPath(c);
      if (path && !hidden.some((p) => path === p || path.startsWith(`${p}/`) || p.startsWith(`${path}/`))) entered[path] = surface?.dataModel.get(path);
    }
    return entered;
  }

  async keep(surfaceId) {
    if (!this.conversationId) return; // a surface drawn for a check (moltCheck), kept nowhere
    await fetch(`/v1/ui/state/${encodeURIComponent(this.conversationId)}/${encodeURIComponent(surfaceId)}`, {
      method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: this.data(surfaceId) }),
    });
  }

  async restore() {
    const reply = await fetch(`/v1/ui/state/${encodeURIComponent(this.conversationId)}`);
    if (!reply.ok) return;
    for (const [surfaceId, data] of Object.entries((await reply.json()).surfaces)) {
      const surface = this.processor.model.getSurface(surfaceId);
      if (!surface) continue;
      for (const [path, value] of Object.entries(data)) surface.dataModel.set(path, value);
    }
  }
}

// The basic catalog draws a field's <label> beside its <input> without linking them; name each
// input after its label so screen readers (and tests) find it by that name.
function labelInputs(host) {
  const name = () => {
    for (const field of host.shadowRoot?.querySelectorAll('label') ?? []) {
      const input = field.parentElement?.querySelector('input, select, textarea');
      if (input && !input.hasAttribute('aria-label')) input.setAttribute('aria-label', field.textContent.trim());
    }
  };
  const watch = () => { name(); new MutationObserver(name).observe(host.shadowRoot, { childList: true, subtree: true }); };
  if (host.shadowRoot) watch(); else requestAnimationFrame(watch);
}

// The data path an input component edits (its `value` binding), if it has one.
function boundPath(component) {
  const value = component.value;
  return value && typeof value === 'object' && typeof value.path === 'string' ? value.path : null;
}

// -- conversations ---------------------------------------------------------------------------

function newConversation() {
  const conversation = { id: crypto.randomUUID(), title: 'New chat', messages: [] };
  conversations.unshift(conversation);
  save();
  open(conversation.id);
}

async function open(id) {
  current = conversations.find((c) => c.id === id);
  location.hash = id;
  surfaces = new Surfaces(id, (action) => sendAction(action));
  $('#messages').replaceChildren();
  for (const message of current.messages) bubble(message);
  listConversations();
  await surfaces.restore();
  $('#composer textarea').focus();
}

function listConversations() {
  $('#conversations').replaceChildren(...conversations.map((c) => {
    const item = document.createElement('li');
    const button = document.createElement('button');
    button.textContent = c.title;
    button.setAttribute('aria-current', c === current ? 'page' : 'false');
    button.addEventListener('click', () => open(c.id));
    item.append(button);
    return item;
  }));
}

// -- messages --------------------------------------------------------------------------------

function bubble(message) {
  const node = document.createElement('article');
  node.className = `message ${message.role}${message.error ? ' error' : ''}`;
  const who = document.createElement('header'); // fill() writes who answered
  const body = document.createElement('div');
  body.className = 'body';
  node.append(who, body);
  $('#messages').append(node);
  fill(node, message);
  return node;
}

function fill(node, message) {
  const body = node.querySelector('.body');
  node.querySelector('header').textContent = message.role === 'user' ? 'You' : `molt${message.specialist ? ` · ${message.specialist}` : ''}`;
  if (message.action) {
    body.textContent = `▸ ${message.action}`;
    return;
  }
  const messages = message.role === 'assistant' ? a2uiMessages(message.content) : null;
  body.replaceChildren();
  if (messages) {
    try {
      surfaces.apply(messages, body);
      if (!body.querySelector('a2ui-surface')) body.textContent = '(the view above was updated)';
    } catch (e) {
      body.textContent = `This view could not be shown: ${e.message}`;
    }
  } else {
    body.textContent = message.content ?? '';
  }
  if (message.role === 'assistant' && message.turnId) node.append(feedbackButtons(message));
}

function feedbackButtons(message) {
  const bar = document.createElement('div');
  bar.className = 'feedback';
  for (const [rating, label, icon] of [['up', 'Good answer', 'Good'], ['down', 'Bad answer', 'Bad']]) {
    const button = document.createElement('button');
    button.textContent = icon;
    button.setAttribute('aria-label', label);
    button.setAttribute('aria-pressed', String(message.rating === rating));
    button.addEventListener('click', async () => {
      const reply = await fetch('/v1/feedback', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ turn_id: message.turnId, rating }) });
      if (!reply.ok) return;
      message.rating = rating;
      save();
      for (const b of bar.querySelectorAll('button')) b.setAttribute('aria-pressed', String(b === button));
    });
    bar.append(button);
  }
  return bar;
}

function history() {
  return current.messages.filter((m) => !m.error).map(({ role, content }) => ({ role, content }));
}

async function send(text) {
  const conversation = current;
  const user = { role: 'user', content: text };
  conversation.messages.push(user);
  if (conversation.title === 'New chat') conversation.title = text.slice(0, 40);
  save();
  listConversations();
  bubble(user);
  const answer = { role: 'assistant', content: '' };
  const node = bubble(answer);
  setBusy(true);
  try {
    const reply = await fetch('/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'molt', messages: history(), stream: true, user: memory.user() }),
    });
    if (!reply.ok) throw new Error((await reply.json()).error?.message ?? reply.statusText);
    answer.specialist = reply.headers.get('x-molt-specialist');
    answer.turnId = reply.headers.get('x-molt-turn-id');
    for await (const chunk of events(reply)) {
      if (chunk.error) throw new Error(chunk.error.message);
      answer.content += chunk.choices?.[0]?.delta?.content ?? '';
      node.querySelector('.body').textContent = answer.content;
    }
    conversation.messages.push(answer);
    save();
    fill(node, answer);
  } catch (e) {
    Object.assign(answer, { content: `Something went wrong: ${e.message}`, error: true });
    node.classList.add('error');
    fill(node, answer);
  } finally {
    setBusy(false);
    memory.refresh(); // facts may have been learned from this turn
  }
}

// A button's event on a surface: back to the proxy as an A2UI client message, once only.
async function sendAction(action) {
  const conversation = current;
  const user = { role: 'user', content: JSON.stringify({ version: 'v0.9', action }), action: `${action.name} (${action.surfaceId})` };
  conversation.messages.push(user);
  save();
  bubble(user);
  setBusy(true);
  try {
    const reply = await fetch('/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
      body: JSON.stringify({ model: 'molt', messages: history(), user: memory.user() }),
    });
    const body = await reply.json();
    if (!reply.ok) throw new Error(body.error?.message ?? reply.statusText);
    const answer = { role: 'assistant', content: body.choices[0].message.content ?? '', specialist: reply.headers.get('x-molt-specialist'), turnId: reply.headers.get('x-molt-turn-id') };
    conversation.messages.push(answer);
    save();
    bubble(answer);
  } catch (e) {
    bubble({ role: 'assistant', content: `Something went wrong: ${e.message}`, error: true });
  } finally {
    setBusy(false);
    memory.refresh(); // facts may have been learned from this turn
  }
}

async function* events(reply) {
  const reader = reply.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const line = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 2);
      if (line.startsWith('data: ') && line !== 'data: [DONE]') yield JSON.parse(line.slice(6));
    }
  }
}

function setBusy(busy) {
  $('#composer button').disabled = busy;
  $('#messages').setAttribute('aria-busy', String(busy));
}

// -- the registry's pairs (when molt up serves one) -----------------------------------------------

async function showRegistry() {
  const reply = await fetch('/api/registry');
  const registry = reply.ok ? await reply.json() : { serving: null };
  if (!registry.serving) return;
  const panel = $('#registry');
  panel.hidden = false;
  const rows = registry.pairs.map((p) => `${p.id}${p.aliases.length ? ` [${p.aliases.join(', ')}]` : ''} · ${p.created}`);
  panel.querySelector('pre').textContent = [`serving: ${registry.serving ?? '-'}`, '', ...rows, '', registry.lineage].join('\n');
}

// -- checking surfaces in this browser (`molt bench genui`) -------------------------------------
// draw(messages) draws A2UI messages with this app's own renderer and catalog, alone, in a fresh
// processor that keeps nothing; the actions its buttons dispatch are collected in `actions`
// instead of reaching a model, and value(surfaceId, path) reads the surface's data model.

let checked = null;
window.moltCheck = {
  actions: [],
  draw(messages) {
    document.querySelector('#molt-check')?.remove();
    const target = document.createElement('section');
    target.id = 'molt-check';
    target.setAttribute('aria-label', 'Surface check');
    document.body.prepend(target);
    this.actions = [];
    checked = new Surfaces(null, (action) => this.actions.push(action));
    checked.apply(messages, target);
    return target.querySelectorAll('a2ui-surface').length;
  },
  value(surfaceId, path) {
    return checked?.processor.model.getSurface(surfaceId)?.dataModel.get(path);
  },
};

// -- start ------------------------------------------------------------------------------------

$('#composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const box = $('#composer textarea');
  const text = box.value.trim();
  if (!text || $('#composer button').disabled) return;
  box.value = '';
  send(text);
});
$('#composer textarea').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); $('#composer').requestSubmit(); }
});
$('#new').addEventListener('click', newConversation);

const wanted = location.hash.slice(1);
if (conversations.some((c) => c.id === wanted)) open(wanted);
else if (conversations.length) open(conversations[0].id);
else newConversation();
showRegistry();
