// The respondent's page: ask, randomize in this browser, send only the randomized report.
// The true answer lives in one local variable of answer() / submitRanking() and is never
// stored, logged, sent or left on the page.
import { uniform, randomizeComparison, duchiDraw, pairs as allPairs } from './randomizer.js';

const $ = (id) => document.getElementById(id);
const app = $('app');
let survey;          // GET api/survey
let storeKey;        // this survey's localStorage key
let current = null;  // the pair on screen: {left, right} item indices
let busy = false;

function setState(state) {
  app.dataset.state = state;
  app.setAttribute('aria-busy', String(state === 'loading' || state === 'sending'));
}
const say = (text) => { $('status').textContent = text; };

// What this device keeps, under one key per survey: {token, pairs: {"i|j": {report, sent}},
// ballot: {vector, sent}, done}. Reports only, already randomized (i < j; report +1 means
// item i preferred), and only until the server has them: a sent report is dropped and only
// its "sent" mark stays, so the coin shown on the page and the stored report can never be put
// together to recover an answer. Memoized RAPPOR-style: a pair is randomized once and never
// asked again (a report not yet sent is sent as it is, never randomized again).
function load() {
  try { return JSON.parse(localStorage.getItem(storeKey)) || {}; } catch { return {}; }
}
const save = (state) => localStorage.setItem(storeKey, JSON.stringify(state));

function signature(s) {  // FNV-1a of the survey's identity: another survey starts afresh
  let h = 0x811c9dc5;
  for (const ch of JSON.stringify([s.title, s.question, s.items, s.design, s.epsilon])) {
    h = Math.imul(h ^ ch.codePointAt(0), 0x01000193) >>> 0;
  }
  return h.toString(16);
}

async function call(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  };
  const res = await fetch(path, init);
  let data = {};
  try { data = await res.json(); } catch { /* no JSON body */ }
  return { status: res.status, data };
}

async function token(renew = false) {
  const known = load().token;
  if (known && !renew) return known;
  const { status, data } = await call('api/respondents', {});
  if (status !== 201 || typeof data.token !== 'string') throw new Error('registration failed');
  save({ ...load(), token: data.token });
  return data.token;
}

// POST one report; an unknown token (404: the server forgot this browser) is replaced once.
async function sendReport(fields) {
  let reply = await call('api/reports', { token: await token(), ...fields });
  if (reply.status === 404) reply = await call('api/reports', { token: await token(true), ...fields });
  return reply;
}

// True when the server recorded the report; otherwise say why and stop.
function accepted(reply) {
  if (reply.status === 201) return true;
  busy = false;
  if (reply.status === 409) {
    save({ ...load(), done: true });
    finish('You have used all the answers this survey allows. Thank you!');
  } else {
    fail(reply.data.error || `the server answered ${reply.status}`);
  }
  return false;
}

function clearQuestions() {
  current = null;
  $('pairs').hidden = true;
  $('ranking').hidden = true;
  $('rank-list').replaceChildren();
}
function finish(message) { clearQuestions(); say(message); setState('done'); }
function fail(message) { clearQuestions(); say(`Sorry, something went wrong: ${message}`); setState('error'); }
const offline = 'could not reach the server. Your randomized answer is saved on this device '
  + 'and will be sent when you reload the page.';

// ---- pairs design -------------------------------------------------------------------------
const sentCount = (state) => Object.values(state.pairs || {}).filter((p) => p.sent).length;
const choiceButtons = () => ['choose-left', 'choose-none', 'choose-right'].map($);

// POST the memoized report of pair key "i|j"; mark it sent when recorded.
async function deliver(key) {
  const [i, j] = key.split('|').map(Number);
  const { report } = load().pairs[key];
  const reply = await sendReport({
    item_a: survey.items[i], item_b: survey.items[j], report, epsilon: survey.epsilon,
  });
  if (reply.status === 201) {
    const state = load();
    state.pairs[key] = { sent: true };
    if (reply.data.remaining === 0) state.done = true;
    save(state);
  }
  return reply;
}

async function flushPairs() {  // reports randomized earlier whose sending failed
  if (load().done) return true;
  for (const [key, entry] of Object.entries(load().pairs || {})) {
    if (!entry.sent && !accepted(await deliver(key))) return false;
  }
  return true;
}

function nextPair() {
  const state = load();
  const answered = state.pairs || {};
  const open = allPairs(survey.items.length).filter(([i, j]) => !(`${i}|${j}` in answered));
  const sent = sentCount(state);
  const limit = Math.min(survey.max_answers, sent + open.length);
  $('progress').textContent = `Answered ${sent} of ${limit}.`;
  if (!open.length) return finish('You have compared every pair. Thank you!');
  if (state.done || sent >= survey.max_answers) {
    return finish('You have given all the answers this survey asks for. Thank you!');
  }
  const [i, j] = open[Math.floor(uniform() * open.length)];  // uniform among unanswered pairs
  current = uniform() < 0.5 ? { left: i, right: j } : { left: j, right: i };
  $('question').textContent = survey.question;
  $('choose-left').textContent = survey.items[current.left];
  $('choose-right').textContent = survey.items[current.right];
  choiceButtons().forEach((b) => { b.disabled = false; });
  $('pairs').hidden = false;
  setState('question');
}

async function answer(choice) {
  if (busy || !current) return;
  busy = true;
  const { left, right } = current;
  const i = Math.min(left, right);
  const key = `${i}|${Math.max(left, right)}`;
  const truth = choice === 'none' ? 0 : ((choice === 'left' ? left : right) === i ? 1 : -1);
  const { report, flipped } = randomizeComparison(truth, survey.epsilon);
  save({ ...load(), pairs: { ...load().pairs, [key]: { report, sent: false } } });
  current = null;
  $('question').focus();  // the clicked button must not keep the focus
  choiceButtons().forEach((b) => { b.disabled = true; });
  $('coin').textContent = '';
  setState('sending');
  say('Sending…');
  let reply;
  try { reply = await deliver(key); } catch { busy = false; return fail(offline); }
  if (!accepted(reply)) return;
  busy = false;
  say('Sent.');
  $('coin').textContent = `Your browser ${flipped ? 'flipped' : 'kept'} your answer before sending it.`;
  nextPair();
}

// ---- ranking design -----------------------------------------------------------------------
const list = $('rank-list');
let dragged = null;

function announce(li, verb) {
  const n = list.children.length;
  say(`${li.textContent} ${verb} position ${[...list.children].indexOf(li) + 1} of ${n}.`);
}

function select(li, on) {
  [...list.children].forEach((x) => x.setAttribute('aria-selected', 'false'));
  li.setAttribute('aria-selected', String(on));
  announce(li, on ? 'picked up at' : 'dropped at');
}

function startRanking() {
  const state = load();
  if (state.ballot?.sent || state.done || survey.max_answers < 1) {
    return finish('Your ranking has been sent. Thank you!');
  }
  if (state.ballot) return sendBallot(null);  // randomized earlier, not yet delivered
  const order = survey.items.map((_, k) => k);
  for (let k = order.length - 1; k > 0; k--) {  // Fisher-Yates: no item starts first by design
    const r = Math.floor(uniform() * (k + 1));
    [order[k], order[r]] = [order[r], order[k]];
  }
  list.replaceChildren(...order.map((item) => {
    const li = document.createElement('li');
    li.textContent = survey.items[item];
    li.dataset.item = String(item);
    li.tabIndex = 0;
    li.draggable = true;
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', 'false');
    return li;
  }));
  $('rank-question').textContent = survey.question;
  $('ranking').hidden = false;
  setState('ranking');
}

list.addEventListener('keydown', (e) => {
  const li = e.target.closest('li');
  if (!li || app.dataset.state !== 'ranking') return;
  const held = li.getAttribute('aria-selected') === 'true';
  if (e.key === 'Enter' || e.key === ' ') {
    e.preventDefault();
    select(li, !held);
  } else if (e.key === 'Escape' && held) {
    select(li, false);
  } else if (e.key === 'ArrowUp' || e.key === 'ArrowDown') {
    e.preventDefault();
    const up = e.key === 'ArrowUp';
    const sibling = up ? li.previousElementSibling : li.nextElementSibling;
    if (!sibling) return;
    if (!held) return sibling.focus();
    if (up) sibling.before(li); else sibling.after(li);
    li.focus();
    announce(li, 'moved to');
  }
});
list.addEventListener('dragstart', (e) => {
  dragged = e.target.closest('li');
  e.dataTransfer.effectAllowed = 'move';
  e.dataTransfer.setData('text/plain', '');
  dragged.classList.add('dragging');
});
list.addEventListener('dragover', (e) => {
  const over = e.target.closest && e.target.closest('li');
  if (!dragged) return;
  e.preventDefault();
  if (!over || over === dragged) return;
  const box = over.getBoundingClientRect();
  if (e.clientY < box.top + box.height / 2) over.before(dragged); else over.after(dragged);
});
list.addEventListener('drop', (e) => e.preventDefault());
list.addEventListener('dragend', () => {
  if (!dragged) return;
  dragged.classList.remove('dragging');
  announce(dragged, 'dropped at');
  dragged = null;
});

async function submitRanking() {
  if (busy || app.dataset.state !== 'ranking') return;
  busy = true;
  const order = [...list.children].map((li) => Number(li.dataset.item));
  const { vector, towards } = duchiDraw(order, survey.epsilon, survey.duchi_scale);
  save({ ...load(), ballot: { vector, sent: false } });
  clearQuestions();  // the order leaves the page before anything is sent
  await sendBallot(towards);
}

async function sendBallot(towards) {
  busy = true;
  setState('sending');
  say('Sending…');
  let reply;
  try {
    reply = await sendReport({ vector: load().ballot.vector, epsilon: survey.epsilon });
  } catch { busy = false; return fail(offline); }
  if (!accepted(reply)) return;
  busy = false;
  save({ ...load(), ballot: { sent: true } });
  if (towards !== null) {
    $('coin').textContent = `Your browser ${towards ? 'kept' : 'flipped'} your answer before `
      + `sending it: it sent a random report on the ${towards ? 'same side as' : 'side opposite to'} your ranking.`;
  }
  finish('Your ranking has been sent. Thank you!');
}

// ---- start --------------------------------------------------------------------------------
$('choose-left').addEventListener('click', () => answer('left'));
$('choose-right').addEventListener('click', () => answer('right'));
$('choose-none').addEventListener('click', () => answer('none'));
$('submit-ranking').addEventListener('click', submitRanking);
document.addEventListener('keydown', (e) => {
  if (app.dataset.state !== 'question' || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
  const choice = { ArrowLeft: 'left', ArrowRight: 'right', ArrowDown: 'none' }[e.key];
  if (choice) { e.preventDefault(); answer(choice); }
});

async function main() {
  try {
    const { status, data } = await call('api/survey');
    if (status !== 200) throw new Error(`survey ${status}`);
    survey = data;
    storeKey = `privrank:${signature(survey)}`;
    document.title = survey.title;
    $('title').textContent = survey.title;
    $('protection').textContent = survey.protection;
    if (survey.design === 'ranking') await startRanking();
    else if (await flushPairs()) nextPair();
  } catch {
    busy = false;
    fail(survey ? offline : 'could not load the survey. Please reload the page.');
  }
}
main();
