// The respondent's page: ask, randomize in this browser, send only the randomized report.
// The true answer lives in one local variable of answer() / submitRanking() and is never
// stored, logged, sent or left on the page.
//
// The page trusts the server only as far as it can check it: it refuses an epsilon outside
// EPSILON_RANGE, computes the cap of answers and the protection sentence itself, and keys all
// it keeps by the survey's served id. index.html loads this module and randomizer.js with
// Subresource Integrity, so a modified script does not run.
import {
  EPSILON_RANGE, checkEpsilon, duchiDraw, pairs as allPairs, randomizeComparison, uniform,
} from './randomizer.js';
import {
  BY_INVITATION, INVITATION_USED, TOKEN, markAnswered, offerElsewhere, takeLink,
} from './resume.js';
import { ONWARD_NOTE, PREVIEW, fetchOrPreview, memos } from './preview.js';

const $ = (id) => document.getElementById(id);
const app = $('app');
app.dataset.script = 'running';  // style.css shows the load-failure note only without this mark
const MECHANISMS = { pairs: 'randomized-response', ranking: 'duchi-l2' };
const TIMEOUT_MS = 30000;                   // a request with no reply by then counts as failed
// A 429 or 503 (nothing was done: the server is busy) is tried again by itself this many more times, after the
// seconds its Retry-After asks (at most longestWait), or without one after firstWait seconds, doubled each time.
const RETRY = { tries: 8, firstWait: 2, longestWait: 60 };
const REDIRECT_SECONDS = 5;                 // the thank-you page goes on to the survey's redirect after this
const LOCAL_HOSTS = ['localhost', '127.0.0.1', '[::1]'];  // privrank.serve.survey.LOCAL_HOSTS, as URL hosts
let survey;          // GET api/survey, as checkSurvey() accepted it
let storeKey;        // this survey's localStorage key and Web Lock name: privrank:<id>
let current = null;  // the pair on screen: {left, right} item indices
let busy = false;
let focusQuestion = false;  // "I agree" was pressed: the question shown next takes the keyboard focus
let registered = null;  // the token this page load registered (a new respondent: nothing to catch up on)

function setState(state) {
  app.dataset.state = state;
  app.setAttribute('aria-busy', String(['loading', 'sending', 'waiting'].includes(state)));
}
const say = (text) => { $('status').textContent = text; };

// An end of the page the person is told about in plain words, in page state `state`:
// 'refused' (the page will not run this survey), 'closed' (this browser cannot take part, or the
// survey has closed) or 'error' (try again later).
class Stop extends Error {
  constructor(message, state = 'error') {
    super(message);
    this.state = state;
  }
}
const unusable = (what) => new Stop(`The survey's description from the server is not usable (${what}), so `
  + 'this page does not run. Please tell the survey\'s organisers.', 'refused');

// ---- what the page checks itself -------------------------------------------------------------

// The survey's texts besides title and question: plain text, "" when the survey has none.
const TEXTS = ['description', 'consent', 'contact', 'closing'];
const CLOSES = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;  // privrank.serve.survey.utc_text

// The served survey, checked; only what is checked is used. Returns {id, title, question, items,
// design, epsilon, cap, invitations, duchiScale, description, consent, contact, closing, closed,
// closes, redirect}, with cap = floor(budget / epsilon + 1e-9) (1 for a ranking), as
// privrank.serve.survey.Survey.max_answers, closes the closing time (ISO 8601 in UTC) or null, and
// redirect where the thank-you page goes on to, or null; throws a Stop otherwise.
function checkSurvey(s) {
  if (!s || typeof s !== 'object') throw unusable('not a description');
  if (typeof s.id !== 'string' || !/^[0-9a-f]{64}$/.test(s.id)) throw unusable('its identity');
  for (const name of ['title', 'question']) {
    if (typeof s[name] !== 'string' || !s[name].trim()) throw unusable(`its ${name}`);
  }
  for (const name of TEXTS) if (typeof s[name] !== 'string') throw unusable(`its ${name}`);
  const { items } = s;
  if (!Array.isArray(items) || items.length < 2 || new Set(items).size !== items.length
      || !items.every((x) => typeof x === 'string' && x.trim())) throw unusable('its items');
  if (!Object.hasOwn(MECHANISMS, s.design) || s.mechanism !== MECHANISMS[s.design]) throw unusable('its design');
  if (typeof s.invitations !== 'boolean') throw unusable('whether it needs an invitation');
  if (typeof s.closed !== 'boolean' || !(s.closes === null || CLOSES.test(s.closes))) throw unusable('its closing time');
  if (!(s.redirect === null || onwardAddress(s.redirect))) throw unusable('its redirect');
  try {
    checkEpsilon(s.epsilon);
  } catch {
    const [lo, hi] = EPSILON_RANGE;
    const given = typeof s.epsilon === 'number' ? `epsilon = ${s.epsilon}` : 'an epsilon that is not a number';
    throw new Stop(`This survey sets ${given} per answer, outside the range ${lo} to ${hi} that this page `
      + `accepts (above ${hi} an answer is barely protected, below ${lo} it is pure noise), so this page `
      + 'does not ask anything. Please tell the survey\'s organisers.', 'refused');
  }
  const ranking = s.design === 'ranking';
  if (!ranking && !(Number.isFinite(s.budget) && s.budget >= s.epsilon * (1 - 1e-9))) throw unusable('its budget');
  if (ranking && !(Number.isFinite(s.duchi_scale) && s.duchi_scale > 0)) throw unusable('its noise scale');
  return {
    id: s.id, title: s.title, question: s.question, items, design: s.design, epsilon: s.epsilon,
    cap: ranking ? 1 : Math.floor(s.budget / s.epsilon + 1e-9), invitations: s.invitations,
    duchiScale: s.duchi_scale, ...Object.fromEntries(TEXTS.map((name) => [name, s[name]])),
    closed: s.closed, closes: s.closes, redirect: s.redirect,
  };
}

// Whether `text` is a redirect as privrank.serve.survey.check_redirect accepts it: an https address (http only
// on this machine), without a user name or password.
function onwardAddress(text) {
  let url;
  try { url = new URL(text); } catch { return false; }
  return (url.protocol === 'https:' || (url.protocol === 'http:' && LOCAL_HOSTS.includes(url.hostname)))
    && !url.username && !url.password;
}

// Show a survey text in the element `id` as plain text (textContent only: nothing in it is markup),
// a paragraph per block of lines between blank lines.
function showText(id, text) {
  $(id).replaceChildren(...text.split(/\n\s*\n/).map((block) => block.trim()).filter(Boolean).map((block) => {
    const p = document.createElement('p');
    p.textContent = block;
    return p;
  }));
}

// e^eps rounded up (so "at most" stays true): three significant digits below 100, else a whole number.
function timesAsLikely(eps) {
  const f = Math.exp(eps);
  if (f >= 100) return Math.ceil(f).toLocaleString('en-US');
  const digits = 2 - Math.floor(Math.log10(f));
  return (Math.ceil(f * 10 ** digits) / 10 ** digits).toFixed(digits);
}

// The protection sentence, composed here from the checked epsilon and cap: eps-local DP per
// answer in plain words (the likelihood ratio of any report between two answers is at most e^eps),
// and how many answers are asked of the unit the survey tells apart (an invitation, or a browser).
function protection(s) {
  const f = timesAsLikely(s.epsilon);
  const where = s.invitations ? 'with your invitation' : 'in this browser';
  if (s.design === 'ranking') {
    return 'Your browser adds random noise to your ranking before sending it: whatever order you choose, '
      + `the report we receive is at most ${f} times as likely as it would be for any other order. You are `
      + `asked for one ranking ${where}.`;
  }
  const k = s.cap;
  return 'Your browser flips a coin before sending each answer and may send the opposite of your choice: '
    + `whatever you answer, the report we receive is at most ${f} times as likely as it would be had you `
    + `answered differently. You are asked at most ${k} answer${k === 1 ? '' : 's'} ${where}.`;
}

// ---- what this browser keeps -----------------------------------------------------------------

// Under one key per survey id: {agreed, token, invite, pairs: {"i|j": {report, key, sent}}, ballot:
// {vector, key, sent}, done}, agreed once the respondent pressed "I agree" under the consent text.
// Reports only, already randomized (i < j; report +1 means item i preferred), each with its
// idempotency key, and only until the server has them: a sent report is dropped and only its
// "sent" mark stays, so the coin shown on the page and the stored report can never be put together
// to recover an answer. Memoized RAPPOR-style: a pair is randomized once
// and never asked again (a report not yet sent is sent as it is, with its key, never randomized
// again). The invitation code stays only until the registration succeeds. A preview keeps its memo apart (memos).
function load() {
  try { return JSON.parse(memos().getItem(storeKey)) || {}; } catch { return {}; }
}

// Run fn(memo) holding this survey's Web Lock, which every tab of this browser takes before it
// changes the memo: a check "is this pair in the memo?" and the write of its report are one step
// for all tabs. The memo fn leaves is saved unless fn throws.
function withMemo(fn) {
  return navigator.locks.request(storeKey, async () => {
    const memo = load();
    const result = await fn(memo);
    memos().setItem(storeKey, JSON.stringify(memo));
    return result;
  });
}

function newKey() {  // a report's idempotency key: 16 random bytes as 22 characters of base64url
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// ---- the server ------------------------------------------------------------------------------

// One request, GET or (with a body) POST: its reply {status, data, retryAfter}, data the JSON object the
// server answered ({} for anything else). A 429 or 503 is tried again by itself (RETRY), saying so: the server
// did nothing, and a report sent again carries its key, which the server stores once. A preview POSTs nothing.
async function call(path, body) {
  for (let tries = 0; ; tries++) {
    const reply = await request(path, body);
    if (!(reply.status === 429 || reply.status === 503) || tries === RETRY.tries) {
      if (tries) say('');  // the wait's note is over
      return reply;
    }
    await pause(waitSeconds(reply.retryAfter, tries), reply);
  }
}

async function request(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  };
  const res = await fetchOrPreview(path, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) });
  let data = {};
  try { data = await res.json(); } catch { /* no JSON body */ }
  return {
    status: res.status, data: data && typeof data === 'object' ? data : {}, retryAfter: res.headers.get('Retry-After'),
  };
}

// The seconds to wait before try number tries + 2: the Retry-After in seconds the server asked (an HTTP date is
// read as none), else firstWait doubled per try; at least 1, at most longestWait.
function waitSeconds(retryAfter, tries) {
  const asked = /^\s*\d+\s*$/.test(retryAfter ?? '') ? Number(retryAfter) : RETRY.firstWait * 2 ** tries;
  return Math.min(RETRY.longestWait, Math.max(1, asked));
}

// Wait `seconds`, having said why and when the page tries again (once: a live region counting down would be read
// out every second), in page state 'waiting'; the state before it comes back after.
function pause(seconds, reply) {
  const before = app.dataset.state;
  setState('waiting');
  const kept = storeKey && unsent(load()) ? ' Your randomized answer is kept on this device meanwhile.' : '';
  say(`The survey's server cannot take this right now (${reason(reply)}). This page will try again by itself `
    + `in ${seconds} second${seconds === 1 ? '' : 's'}.${kept}`);
  return new Promise((resolve) => { setTimeout(resolve, seconds * 1000); }).then(() => {
    setState(before);
    say('Trying again…');
  });
}

// Why the server refused, in plain words: its JSON "error", which is written for people and never quotes what
// was sent, else (no JSON: a proxy's page, say) a sentence of the page's own.
function reason({ data }) {
  const said = typeof data.error === 'string' ? data.error.trim().replace(/[.\s]+$/, '') : '';
  return said || 'the survey\'s server is not answering properly right now';
}

// Whether this browser cannot register: an invitation-only survey, and neither a token nor a code.
const uninvited = (memo) => survey.invitations && !memo.token && !memo.invite;
// Whether this browser holds a randomized answer the server may not have.
const unsent = (memo) => Object.values(memo.pairs || {}).some((p) => !p.sent) || (memo.ballot && !memo.ballot.sent);
// What happens to an answer the server may not have: it is kept, and sent again on reload.
function pending() {
  return unsent(load()) ? 'Your randomized answer is saved on this device and will be sent when you reload the page.'
    : 'Please reload the page to try again.';
}
// The end of a survey that closed (GET api/survey says so, or the server answered 410): nothing is
// asked or sent any more. An answer not yet sent stays on this device, unsent.
function closedStop(closes) {
  const when = closes ? ` on ${closes.slice(0, 10)} at ${closes.slice(11, 16)} UTC` : '';
  const kept = unsent(load()) ? ' Your randomized answer saved on this device could not be sent, because the '
    + 'survey closed.' : '';
  return new Stop(`This survey has closed${when}: it accepts no more answers.${kept}`, 'closed');
}
// A 410 from the server: the survey closed since this page loaded it.
const closedReply = ({ status, data }) => status === 410 && data.reason === 'closed';

// This browser's token: the one kept under the survey's id, else a new registration (with the
// kept invitation, on an invitation-only survey). Under the lock, so tabs register once between
// them. `stale`: a token the server no longer knows, replaced (unless another tab already did).
async function token(stale) {
  const got = await withMemo(async (memo) => {
    if (memo.token && memo.token !== stale) return memo.token;
    delete memo.token;
    if (uninvited(memo)) return new Stop(BY_INVITATION, 'closed');
    const { status, data } = await call('api/respondents', survey.invitations ? { invitation: memo.invite } : {});
    if ((status === 201 || status === 200) && TOKEN.test(data.token)) {  // 200: an invitation's respondent again
      delete memo.invite;
      memo.token = data.token;
      if (status === 201) registered = data.token;
      return data.token;
    }
    if (status === 403 && survey.invitations) {
      delete memo.invite;
      return new Stop(INVITATION_USED, 'closed');
    }
    if (closedReply({ status, data })) return closedStop(null);
    return new Stop(`Sorry, this page could not join the survey: ${reason({ data })}. Please reload the page to `
      + 'try again.');
  });
  if (got instanceof Stop) throw got;
  return got;
}

// What the server holds of this respondent (sent from another device, or before this browser's storage was
// cleared), marked sent: never asked again. An unknown token (404) is replaced, as for a report.
async function catchUp(known) {
  if (known === registered) return;
  const reply = await call('api/progress', { token: known });
  if (reply.status === 404) return void await token(known);
  if (reply.status !== 200 || !await withMemo((memo) => markAnswered(memo, reply.data, survey))) {
    throw new Stop(`Sorry, this page could not learn which answers you gave already: ${reason(reply)}. Please `
      + 'reload the page.');
  }
}

// POST one report; an unknown token (404: the server forgot this browser) is replaced once.
async function sendReport(fields) {
  const known = await token();
  const reply = await call('api/reports', { token: known, ...fields });
  return reply.status === 404 ? call('api/reports', { token: await token(known), ...fields }) : reply;
}

// What a report's reply means: 'stored' (now, or before: a resend), 'answered' (this pair was
// already reported under another key), 'exhausted' (the budget is used); a Stop otherwise.
function outcome({ status, data }) {
  if (status === 201 || (status === 200 && data.duplicate === true)) return 'stored';
  if (status === 409 && data.reason === 'pair-answered') return 'answered';
  if (status === 409 && data.reason === 'exhausted') return 'exhausted';
  if (closedReply({ status, data })) throw closedStop(null);
  throw new Stop(`Sorry, your answer could not be sent: ${reason({ data })}. ${pending()}`);
}

function clearQuestions() {
  current = null;
  $('progress').hidden = true;
  $('pairs').hidden = true;
  $('ranking').hidden = true;
  $('rank-list').replaceChildren();
}
function finish(message) {
  clearQuestions();
  say(message);
  showText('closing', survey.closing);
  setState('done');
  if (survey.redirect) goOn(survey.redirect);
}

// The survey's redirect after the thank-you: a link "Continue", and the page goes there by itself
// REDIRECT_SECONDS later (a navigation: the page's Content-Security-Policy governs what it loads, not where
// it goes; its Referrer-Policy keeps the survey's address from the next site). A preview does not go by itself.
function goOn(url) {
  $('continue').href = url;
  $('onward-note').textContent = PREVIEW ? ONWARD_NOTE : `This page will take you on in ${REDIRECT_SECONDS} seconds.`;
  $('onward').hidden = false;
  if (!PREVIEW) setTimeout(() => location.assign(url), REDIRECT_SECONDS * 1000);
}
const USED_ALL = 'You have used all the answers this survey allows. Thank you!';

function stop(error) {
  busy = false;
  clearQuestions();
  if (error instanceof Stop) {
    say(error.message);
    setState(error.state);
  } else {  // no reply (a network failure or the time limit)
    say(`Sorry, something went wrong: ${survey ? `could not reach the server. ${pending()}`
      : 'could not load the survey. Please reload the page.'}`);
    setState('error');
  }
}

// ---- pairs design -------------------------------------------------------------------------
const sentCount = (memo) => Object.values(memo.pairs || {}).filter((p) => p.sent).length;
const choiceButtons = () => ['choose-left', 'choose-none', 'choose-right'].map($);

// POST the memoized report of pair "i|j" with its key, unless it is sent already (by another
// tab); mark it sent when the server holds it. Returns outcome().
async function deliver(pairKey) {
  const entry = load().pairs?.[pairKey];
  if (!entry || entry.sent) return 'stored';
  const [i, j] = pairKey.split('|').map(Number);
  const reply = await sendReport({
    key: entry.key, item_a: survey.items[i], item_b: survey.items[j], report: entry.report,
    epsilon: survey.epsilon,
  });
  const result = outcome(reply);
  await withMemo((memo) => {  // a closed survey has no answer left, yet may reopen (its closes moved later)
    if (result === 'exhausted' || (reply.data.remaining === 0 && !survey.closed)) memo.done = true;
    if (result !== 'exhausted') (memo.pairs ||= {})[pairKey] = { sent: true };
  });
  return result;
}

async function flushPairs() {  // reports randomized earlier whose sending failed
  for (const [pairKey, entry] of Object.entries(load().pairs || {})) {
    if (load().done) return;
    if (!entry.sent) await deliver(pairKey);
  }
}

function nextPair() {
  const memo = load();
  const answered = memo.pairs || {};
  const open = allPairs(survey.items.length).filter(([i, j]) => !(`${i}|${j}` in answered));
  const sent = sentCount(memo);
  if (!open.length) return finish('You have compared every pair. Thank you!');
  if (memo.done || sent >= survey.cap) return finish('You have given all the answers this survey asks for. Thank you!');
  const total = Math.min(survey.cap, sent + open.length);  // the answers this browser is asked, sent ones included
  $('progress-text').textContent = `Answer ${sent + 1} of ${total}`;
  Object.assign($('progress-bar'), { max: total, value: sent });
  $('progress').hidden = false;
  const [i, j] = open[Math.floor(uniform() * open.length)];  // uniform among unanswered pairs
  current = uniform() < 0.5 ? { left: i, right: j } : { left: j, right: i };
  $('question').textContent = survey.question;
  $('choose-left').textContent = survey.items[current.left];
  $('choose-right').textContent = survey.items[current.right];
  choiceButtons().forEach((b) => { b.disabled = false; });
  $('pairs').hidden = false;
  setState('question');
  if (focusQuestion) $('question').focus();  // after an answer it has the focus already (answer())
}

async function answer(choice) {
  if (busy || !current) return;
  busy = true;
  const { left, right } = current;
  const i = Math.min(left, right);
  const pairKey = `${i}|${Math.max(left, right)}`;
  current = null;
  $('question').focus();  // the clicked button must not keep the focus
  choiceButtons().forEach((b) => { b.disabled = true; });
  $('coin').textContent = '';
  setState('sending');
  say('Sending…');
  try {
    // Randomize only if no tab of this browser has: the memo is re-read under the lock. If another
    // tab answered this pair meanwhile, its report is the one sent (or already was), not a new draw.
    const drawn = await withMemo((memo) => {
      const pairs = (memo.pairs ||= {});
      if (pairs[pairKey]) return null;
      const truth = choice === 'none' ? 0 : ((choice === 'left' ? left : right) === i ? 1 : -1);
      const { report, flipped } = randomizeComparison(truth, survey.epsilon);
      pairs[pairKey] = { report, key: newKey(), sent: false };
      return { flipped, random: truth === 0 };
    });
    const result = await deliver(pairKey);
    if (result === 'exhausted') return finish(USED_ALL);
    busy = false;
    if (drawn && result === 'stored') {
      say('Sent.');
      // "No preference" has no answer to keep or flip: randomized response sends a fair coin's side
      $('coin').textContent = drawn.random ? 'You chose no preference, so your browser sent a random answer.'
        : `Your browser ${drawn.flipped ? 'flipped' : 'kept'} your answer before sending it.`;
    } else {
      say('This pair was already answered from this browser, so that answer counts: here is the next pair.');
    }
    nextPair();
  } catch (error) {
    stop(error);
  }
}

// ---- ranking design -----------------------------------------------------------------------
const list = $('rank-list');
let dragged = null;
const label = (li) => survey.items[Number(li.dataset.item)];

function announce(li, verb) {
  const n = list.children.length;
  say(`${label(li)} ${verb} position ${[...list.children].indexOf(li) + 1} of ${n}.`);
}

// An item's ↑ or ↓ button: large enough to tap, reachable with Tab, named after its item.
function moveButton(name, direction) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'move';
  button.dataset.move = direction;
  button.textContent = direction === 'up' ? '↑' : '↓';
  button.setAttribute('aria-label', `Move ${name} ${direction}`);
  return button;
}

function startRanking() {
  const memo = load();
  if (memo.done) return finish(USED_ALL);
  if (memo.ballot) return sendBallot(null);  // randomized earlier: sent again as it is, or sent
  const order = survey.items.map((_, k) => k);
  for (let k = order.length - 1; k > 0; k--) {  // Fisher-Yates: no item starts first by design
    const r = Math.floor(uniform() * (k + 1));
    [order[k], order[r]] = [order[r], order[k]];
  }
  list.replaceChildren(...order.map((item) => {
    const li = document.createElement('li');
    const name = document.createElement('span');
    name.className = 'label';
    name.textContent = survey.items[item];
    li.append(name, moveButton(survey.items[item], 'up'), moveButton(survey.items[item], 'down'));
    li.dataset.item = String(item);
    li.draggable = true;
    return li;
  }));
  $('rank-question').textContent = survey.question;
  $('ranking').hidden = false;
  setState('ranking');
  if (focusQuestion) $('rank-question').focus();
}

list.addEventListener('click', (e) => {
  const button = e.target.closest('button[data-move]');
  if (!button || app.dataset.state !== 'ranking') return;
  const li = button.closest('li');
  const up = button.dataset.move === 'up';
  const sibling = up ? li.previousElementSibling : li.nextElementSibling;
  if (!sibling) return say(`${label(li)} is already ${up ? 'first' : 'last'}.`);
  if (up) sibling.before(li); else sibling.after(li);
  button.focus();  // moving the item took the focus off its button
  announce(li, 'moved to');
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
  clearQuestions();  // the order leaves the page before anything is sent
  try {
    // One ballot per browser: if another tab drew one meanwhile, that one is sent, not a new draw.
    const towards = await withMemo((memo) => {
      if (memo.ballot) return null;
      const draw = duchiDraw(order, survey.epsilon, survey.duchiScale);
      memo.ballot = { vector: draw.vector, key: newKey(), sent: false };
      return draw.towards;
    });
    await sendBallot(towards);
  } catch (error) {
    stop(error);
  }
}

// POST the memoized ballot with its key, unless it is sent already; returns outcome() ('stored' marks it sent).
async function deliverBallot() {
  const { ballot } = load();
  if (!ballot || ballot.sent) return 'stored';
  const result = outcome(await sendReport({ key: ballot.key, vector: ballot.vector, epsilon: survey.epsilon }));
  await withMemo((memo) => {
    if (result === 'stored') memo.ballot = { sent: true }; else memo.done = true;
  });
  return result;
}

// Send the memoized ballot (unless sent) and thank; towards: the coin to show, or null.
async function sendBallot(towards) {
  busy = true;
  setState('sending');
  say('Sending…');
  if (await deliverBallot() !== 'stored') return finish(USED_ALL);
  busy = false;
  if (towards !== null) {
    $('coin').textContent = 'Your browser sent a random report instead of your ranking, drawn on the '
      + `${towards ? 'same side as' : 'side opposite to'} your ranking.`;
  }
  return finish('Your ranking has been sent. Thank you!');
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
// An invitation or resume link opened in this tab changes only the fragment: start again to read it.
window.addEventListener('hashchange', () => location.reload());

// The consent text and its two buttons; resolves once the respondent agreed (kept: not asked again).
// Nothing is registered or sent before. "I do not want to take part" ends the page (state 'declined') with
// thanks: nothing is registered, sent or kept, and a reload asks again.
function consent() {
  showText('consent-text', survey.consent);
  $('consent').hidden = false;
  setState('consent');
  return new Promise((resolve, reject) => {
    $('agree').addEventListener('click', () => {
      $('consent').hidden = true;  // the pressed button goes with it: the question takes the focus once shown
      focusQuestion = true;
      setState('loading');
      withMemo((memo) => { memo.agreed = true; }).then(resolve, reject);
    }, { once: true });
    $('decline').addEventListener('click', () => {
      for (const id of ['consent', 'description', 'protection']) $(id).hidden = true;
      say('Thank you. You chose not to take part, so nothing was recorded: no answer was sent and you were not '
        + 'registered.');
      setState('declined');
    }, { once: true });
  });
}

// A closed survey stores nothing new, yet answers a report it holds already (stored before the close, its
// reply lost) as stored: what this browser kept unsent is sent once more, so that it stops keeping what the
// server has; the rest stays on the device, unsent.
async function resendKept() {
  const memo = load();
  if (!navigator.locks || !memo.token || !unsent(memo)) return;
  try {
    if (survey.design === 'ranking') await deliverBallot(); else await flushPairs();
  } catch (error) {
    if (!(error instanceof Stop && error.state === 'closed')) throw error;
  }
}

async function main() {
  try {
    const reply = await call('api/survey');
    if (reply.status !== 200) {
      throw new Stop(`Sorry, the survey could not be loaded: ${reason(reply)}. Please reload the page.`);
    }
    survey = checkSurvey(reply.data);
  } catch (error) {
    return stop(error instanceof Stop ? error : new Stop('Sorry, something went wrong: could not load the '
      + 'survey. Please reload the page.'));
  }
  try {
    storeKey = `privrank${PREVIEW ? '-preview' : ''}:${survey.id}`;
    document.title = survey.title;
    $('title').textContent = survey.title;
    $('contact-text').textContent = survey.contact;
    $('contact').hidden = !survey.contact;
    if (survey.closed) {
      await resendKept();
      throw closedStop(survey.closes);
    }
    showText('description', survey.description);
    $('protection').textContent = protection(survey);
    if (!navigator.locks) {
      throw new Stop('This page needs a secure connection (an https address) and a recent browser, so '
        + 'that every answer is randomized only once. Please open the survey\'s https link.', 'refused');
    }
    if (await takeLink(survey, withMemo) && !load().token) {
      throw new Stop('This link is incomplete. Please open it again, copying the whole link.', 'closed');
    }
    const memo = load();
    if (!memo.done) {
      if (uninvited(memo)) throw new Stop(BY_INVITATION, 'closed');
      if (survey.consent && !memo.agreed) await consent();
      await catchUp(await token());
    }
    if (survey.design === 'ranking') return startRanking();
    offerElsewhere(survey, load().token);
    await flushPairs();
    nextPair();
  } catch (error) {
    stop(error);
  }
}
main();
