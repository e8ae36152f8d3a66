// The memory panel: who this browser's user is (an id kept in localStorage, sent with chat requests
// as OpenAI's `user`), and what the proxy remembers about them (/v1/memory): list, tell, correct,
// forget one fact, forget everything, and each fact's older values.

const STORE = 'molt.user';
export const USER_ID = /^[A-Za-z0-9_.:@-]{1,80}$/;
const BAD_ID = 'A user id is 1 to 80 letters, digits or _ . : @ - characters (no spaces).';

function generatedId() {
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

function storedId() {
  let id = null;
  try { id = localStorage.getItem(STORE); } catch { /* storage off: a fresh id for this page */ }
  if (id && USER_ID.test(id)) return id;
  id = generatedId();
  try { localStorage.setItem(STORE, id); } catch { /* kept for this page only */ }
  return id;
}

function element(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name === 'text') node.textContent = value;
    else if (name === 'class') node.className = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

function recorded(fact) {
  const source = fact.source === 'user' ? 'you' : 'conversation';
  return element('span', { class: 'fact-meta' }, `from ${source} · `, element('time', { datetime: fact.recorded_at, text: when(fact.recorded_at) }));
}

// The panel in `root` (the nav's <details id="memory">). `user()` is the id chat requests send;
// `refresh()` reloads the facts when the panel is open (it is reloaded on opening anyway).
export function memoryPanel(root) {
  const idForm = root.querySelector('#memory-user');
  const idInput = root.querySelector('#memory-user-id');
  const alert = root.querySelector('#memory-error');
  const status = root.querySelector('#memory-status');
  const list = root.querySelector('#memory-facts');
  const addForm = root.querySelector('#memory-add');
  const forgetAll = root.querySelector('#memory-forget');

  let user = storedId();
  let facts = null; // null: not loaded yet for this user
  let loaded = 0; // which load's answer may still be drawn: a newer load (or another user) wins
  const drafts = new Map(); // key → the value being typed in its edit box (kept across redraws)
  const expanded = new Set(); // keys whose history is shown
  idInput.value = user;

  const fail = (message) => { alert.textContent = message; };
  const clear = () => { alert.textContent = ''; };

  async function api(method, params, body) {
    const query = new URLSearchParams(params).toString();
    const reply = await fetch(`/v1/memory?${query}`, {
      method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined,
    });
    let data = null;
    try { data = await reply.json(); } catch { /* not JSON: the status says it */ }
    if (!reply.ok) {
      const detail = data?.error?.message ?? (Array.isArray(data?.detail) ? data.detail.map((d) => d.msg).join('; ') : null);
      throw new Error(detail ?? `${reply.status} ${reply.statusText}`);
    }
    return data;
  }

  async function load() {
    const ticket = ++loaded;
    const who = user;
    list.setAttribute('aria-busy', 'true');
    try {
      const data = await api('GET', { user: who });
      if (ticket !== loaded) return;
      if (JSON.stringify(data.facts) === JSON.stringify(facts)) return; // unchanged: keep what is being typed, and the focus
      facts = data.facts;
      draw();
    } catch (e) {
      if (ticket !== loaded) return;
      fail(`Could not load what molt remembers: ${e.message}`);
      if (facts === null) status.textContent = 'Not loaded.';
    } finally {
      if (ticket === loaded) list.setAttribute('aria-busy', 'false');
    }
  }

  function draw() {
    if (facts === null) {
      status.textContent = 'Loading…';
      list.replaceChildren();
      forgetAll.disabled = true;
      return;
    }
    for (const key of [...drafts.keys()]) if (!facts.some((f) => f.key === key)) drafts.delete(key);
    for (const key of [...expanded]) if (!facts.some((f) => f.key === key)) expanded.delete(key);
    status.textContent = facts.length ? `${facts.length} remembered about ${user}` : `Nothing remembered about ${user} yet.`;
    const focused = list.contains(document.activeElement) ? document.activeElement : null;
    const again = focused && { key: focused.closest('li.fact')?.dataset.key, label: focused.getAttribute('aria-label'), start: focused.selectionStart, end: focused.selectionEnd };
    list.replaceChildren(...facts.map(item));
    forgetAll.disabled = !facts.length;
    if (again?.label) { // a redraw keeps the focus where it was (an edit box keeps its caret too)
      const same = [...list.querySelectorAll('li.fact')].find((li) => li.dataset.key === again.key)?.querySelector(`[aria-label="${CSS.escape(again.label)}"]`);
      same?.focus();
      if (same?.setSelectionRange && again.start != null) same.setSelectionRange(again.start, again.end);
    }
  }

  function item(fact) {
    const li = element('li', { class: 'fact', 'data-key': fact.key });
    li.append(element('div', {}, element('strong', { text: fact.key }), ': ', element('span', { class: 'fact-value', text: fact.value })), recorded(fact));
    const actions = element('div', { class: 'fact-actions' });
    const edit = element('button', { type: 'button', 'aria-label': `Edit ${fact.key}`, text: 'Edit' });
    const history = element('button', { type: 'button', 'aria-label': `History of ${fact.key}`, 'aria-expanded': String(expanded.has(fact.key)), text: 'History' });
    const forget = element('button', { type: 'button', 'aria-label': `Forget ${fact.key}`, text: 'Forget' });
    actions.append(edit, history, forget);
    li.append(actions);

    const older = element('ul', { class: 'fact-history', 'aria-label': `Earlier values of ${fact.key}` });
    older.hidden = !expanded.has(fact.key);
    li.append(older);
    if (expanded.has(fact.key)) showHistory(fact, older);

    if (drafts.has(fact.key)) li.insertBefore(editor(fact), actions);
    edit.addEventListener('click', () => {
      if (!drafts.has(fact.key)) drafts.set(fact.key, fact.value);
      draw();
      list.querySelector(`li[data-key="${CSS.escape(fact.key)}"] .fact-edit input`)?.focus();
    });
    history.addEventListener('click', () => {
      if (expanded.has(fact.key)) expanded.delete(fact.key); else expanded.add(fact.key);
      history.setAttribute('aria-expanded', String(expanded.has(fact.key)));
      older.hidden = !expanded.has(fact.key);
      if (expanded.has(fact.key)) showHistory(fact, older);
    });
    forget.addEventListener('click', async () => {
      forget.disabled = true;
      try {
        await api('DELETE', { user, key: fact.key });
        clear();
        drafts.delete(fact.key);
        expanded.delete(fact.key);
      } catch (e) {
        fail(`Could not forget “${fact.key}”: ${e.message}`);
      }
      await load();
    });
    return li;
  }

  function editor(fact) {
    const form = element('form', { class: 'fact-edit' });
    const input = element('input', { type: 'text', 'aria-label': `New value for ${fact.key}`, required: '' });
    input.value = drafts.get(fact.key);
    input.addEventListener('input', () => drafts.set(fact.key, input.value));
    const save = element('button', { type: 'submit', text: 'Save' });
    const cancel = element('button', { type: 'button', text: 'Cancel' });
    cancel.addEventListener('click', () => { drafts.delete(fact.key); draw(); });
    form.append(input, save, cancel);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      save.disabled = true;
      try {
        await api('POST', {}, { user, key: fact.key, value: input.value });
        clear();
        drafts.delete(fact.key);
      } catch (e) {
        fail(`Could not change “${fact.key}”: ${e.message}`); // the typed value stays in its box
        save.disabled = false;
        return;
      }
      await load();
    });
    return form;
  }

  async function showHistory(fact, target) {
    target.replaceChildren(element('li', { text: 'Loading…' }));
    try {
      const rows = (await api('GET', { user, key: fact.key })).history.filter((row) => row.id !== fact.id);
      target.replaceChildren(...(rows.length
        ? rows.map((row) => element('li', {}, element('span', { class: 'fact-value', text: row.value }), ' ', recorded(row)))
        : [element('li', { text: 'No earlier values.' })]));
    } catch (e) {
      target.replaceChildren();
      fail(`Could not load the history of “${fact.key}”: ${e.message}`);
    }
  }

  function useId() {
    const id = idInput.value.trim();
    if (!USER_ID.test(id)) {
      fail(`${BAD_ID} Still using “${user}”.`);
      idInput.setAttribute('aria-invalid', 'true');
      return;
    }
    idInput.removeAttribute('aria-invalid');
    clear();
    if (id === user) return;
    user = id;
    idInput.value = id;
    try { localStorage.setItem(STORE, id); } catch { /* kept for this page only */ }
    facts = null;
    drafts.clear();
    expanded.clear();
    draw();
    load();
  }

  idForm.addEventListener('submit', (event) => { event.preventDefault(); useId(); });

  addForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const key = addForm.elements.key;
    const value = addForm.elements.value;
    const button = addForm.querySelector('button');
    button.disabled = true;
    try {
      await api('POST', {}, { user, key: key.value, value: value.value });
      clear();
      addForm.reset();
      key.focus();
    } catch (e) {
      fail(`Could not remember that: ${e.message}`); // what was typed stays in the form
      return;
    } finally {
      button.disabled = false;
    }
    await load();
  });

  forgetAll.addEventListener('click', async () => {
    if (!confirm(`Forget everything molt remembers about ${user}, history included?`)) return;
    try {
      await api('DELETE', { user });
      clear();
    } catch (e) {
      fail(`Could not forget everything: ${e.message}`);
    }
    await load();
  });

  root.addEventListener('toggle', () => { if (root.open) load(); });
  draw();

  // After an answer: the proxy's listing waits until that turn's facts are written.
  function refresh() {
    if (root.open) load();
  }

  return { user: () => user, refresh };
}
