// Signing in and out: the form (a host user's password, checked by PAM
// in nprofd), the header's name and Sign out, and the page's state when
// the session ends (every module forgets what it held: session.js).
import { api } from './api.js';
import { $, setText, showErr, once } from './dom.js';
import { time } from './fmt.js';
import { session, begin, end, onLost } from './session.js';
import { route, show, leave } from './router.js';
import { load } from './nouns.js';

export const signinView = {
	el: $('view-signin'),
	enter() { setTimeout(() => $('signin-user').focus(), 0); },
};

// s: GET /api/v1/session's reply. The nouns first (nouns.js): every
// view draws with them.
export async function signedIn(s) {
	begin(s);
	await load(path => api('GET', path));
	$('nav').hidden = false;
	$('me').hidden = false;
	setText($('me-name'), s.user + (s.admin ? ' (admin)' : ''));
	$('me-name').title = `uid ${s.uid}` + (s.expires ? `, session until ${time(s.expires)}` : '');
	route();
}

// why: the API's word on why the session ended ('' for Sign out).
export function signedOut(why) {
	const was = !!session();
	end();
	$('nav').hidden = true;
	$('me').hidden = true;
	leave();
	show('signin', {});
	showErr($('signin-err'), was && why ? 'Signed out: ' + why : '');
}
onLost(signedOut);

$('signin').addEventListener('submit', ev => {
	ev.preventDefault();
	const err = $('signin-err');
	once('signin', [$('signin-submit')], async () => {
		showErr(err, '');
		try {
			const s = await api('POST', '/api/v1/session', {
				user: $('signin-user').value.trim(), password: $('signin-password').value });
			$('signin-password').value = '';
			await signedIn(s);
		} catch (e) {
			showErr(err, e.status === 401 ? (e.message || 'wrong user or password') :
				e.status === 429 ? 'Too many attempts: ' + e.message : e);
		}
	});
});

$('signout').addEventListener('click', () => {
	once('signout', [$('signout')], async () => {
		try { await api('DELETE', '/api/v1/session'); } catch (e) { /* signed out anyway */ }
		signedOut('');
	});
});
