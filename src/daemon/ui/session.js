// Who is signed in: GET /api/v1/session's object (its CSRF token), and
// what each module forgets when the session ends (another user may sign
// in next). No DOM.

let current = null;
const forgetters = [];
let lostHandler = null;

export const session = () => current;
export function begin(s) { current = s; }

// fn runs at every sign-out, before the next user signs in.
export function forgetOnEnd(fn) { forgetters.push(fn); }
export function end() {
	for (const f of forgetters) f();
	current = null;
}

// The session ended on nprofd's side (a 401): fn(why) signs the page
// out; set once, by the sign-in view.
export function onLost(fn) { lostHandler = fn; }
export function lost(why) { if (current && lostHandler) lostHandler(why); }
