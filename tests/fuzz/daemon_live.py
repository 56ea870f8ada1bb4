#!/usr/bin/env python3
# daemon_live: the request generator of tests/integration/daemon_fuzz.sh,
# which runs it against a private nprofd (its arguments: SEED SECONDS
# SOCKET HTTP_ADDR WORKERS REPORT_FILE).
# The request generator: raw HTTP/1.x over AF_UNIX and AF_INET, from
# several threads, each with its own random.Random(seed + thread).
import base64, json, random, re, socket, sys, threading, time

SEED, SECS, SOCK, ADDR, WORKERS, REPORT = (int(sys.argv[1]), float(sys.argv[2]), sys.argv[3],
                                           sys.argv[4], sys.argv[5].split(','), sys.argv[6])
THREADS = 4
TIMEOUT = 10.0
# Each thread's first request and every START_EVERY-th after it is a
# well-formed start (Gen.start_request): a slow or busy host gets fewer
# requests through, and the random ones alone started none in one run
# under load.
START_EVERY = 100
HOST, PORT = ADDR.rsplit(':', 1)
# nprofd's own name, as a client that reached it sends it (any other
# over HTTP is answered 421: the junk headers below try some)
HOST_HEADER = b'Host: ' + ADDR.encode()

MODES = ['cpu', 'wall', 'alloc', 'lock', 'page-faults', 'context-switches', 'cycles',
         'instructions', 'cache-misses', 'heap', 'CPU', '', 'cpu ', 'x' * 300]
FORMATS = ['pprof', 'jfr', 'flamegraph', 'tree', 'svg', 'speedscope', 'collapsed', 'dot',
           'summary', 'traces', 'flat', 'threads', 'json', 'text', 'core', 'html', '', 'x' * 200]
ACTIONS = ['stacks', 'heapdump', 'coredump', 'restart', 'dump', '', 'stacks/x']
QKEYS = ['format', 'info', 'limit', 'status', 'worker', 'instance', 'user', 'q', 'service', 'before', 'after',
         'host', 'before_host', 'after_host', 'batch',
         'agent', 'pid', 'container', 'pod', 'unit', 'qos', 'x', '', 'format[]', 'FORMAT']
STATUSES = ['RUNNING', 'FINISHED', 'STOPPED', 'FAILED', 'running', '']


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def chance(self, p):
        return self.r.random() < p

    def junk(self, n=None, alphabet=None):
        r = self.r
        n = r.randint(0, 40) if n is None else n
        if alphabet is None:
            return bytes(r.randrange(256) for _ in range(n))
        return ''.join(r.choice(alphabet) for _ in range(n))

    def number_text(self):
        r = self.r
        return r.choice(['0', '-1', '1', '2', '3', str(r.randint(1, 60)), str(r.randint(1, 5000)),
                         '9' * r.randint(10, 40), '1abc', '+1', ' 1', '0x1', '01', '1.5',
                         '1e3', '-0', '', str(2 ** 63), str(-2 ** 63), 'NaN', '10000', '100000'])

    def worker_id(self):
        r = self.r
        c = r.random()
        if c < 0.35:
            return r.choice(WORKERS)
        if c < 0.55:
            return '%d-%d' % (r.randint(1, 4194304), r.randint(0, 2 ** 40))
        return r.choice(['1-x', '0-0', '01-5', '1-', '-1', '1', '1-1-1', 'x' * r.randint(40, 300),
                         '%d-%s' % (r.randint(1, 99), '9' * 30), WORKERS[0] + '0',
                         WORKERS[0].replace('-', '+'), self.junk(None, 'abc-0123456789%/.')])

    # ---- paths ----
    def path(self):
        r = self.r
        w, n = self.worker_id(), self.number_text()
        p = r.choice([
            '/api/v1/workers', '/api/v1/workers/' + w, '/api/v1/workers/%s/%s' % (w, r.choice(ACTIONS)),
            '/api/v1/instances', '/api/v1/instances/' + n, '/api/v1/instances/%s/stop' % n,
            '/api/v1/artifacts', '/api/v1/artifacts/' + n, '/api/v1/tokens', '/api/v1/tokens/' + n,
            '/api/v1/audit', '/api/v1/whoami', '/api/v1/meta', '/', '/api', '/api/v1', '/api/v1/', '/api/v1/nothing',
            '/api/v2/workers', '/API/V1/WHOAMI', '/api/v1/workersx', '/api/v1/instances/',
            '/api/v1/artifacts//', '*', 'http://nprofd/api/v1/whoami', '/api/v1/session',
            '/api/v1/session', '/api/v1/host', '/api/v1/diff', '/ui/main.js', '/ui/', '/ui/x.js'])
        for _ in range(r.choice([0, 0, 0, 1, 1, 2, 4])):
            p = self.mutate_path(p)
        return p.encode('utf-8', 'surrogateescape') if isinstance(p, str) else p

    def mutate_path(self, p):
        r = self.r
        if isinstance(p, bytes):
            p = p.decode('latin-1')
        c = r.randrange(9)
        i = r.randint(0, len(p))
        if c == 0:    # escape a character
            if p:
                j = r.randrange(len(p))
                p = p[:j] + '%%%02X' % (ord(p[j]) & 0xff) + p[j + 1:]
        elif c == 1:  # an escape, good or bad
            p = p[:i] + r.choice(['%00', '%ff', '%FF', '%2f', '%2e%2e', '%zz', '%', '%4', '%c0%af',
                                  '%e2%82', '%ef%bf%bd', '%0a', '%0d%0a', '%20']) + p[i:]
        elif c == 2:
            p = p[:i] + r.choice(['..', '/..', '/../', '/./', '//', '/.', '../../etc/passwd']) + p[i:]
        elif c == 3:
            p = p + '/' + self.junk(r.randint(0, 20), 'abcxyz0123456789-_.')
        elif c == 4:  # raw bytes the URL may not hold
            p = p[:i] + self.junk(r.randint(1, 4)).decode('latin-1') + p[i:]
        elif c == 5:  # long
            p = p + '/' + 'a' * r.choice([900, 1024, 1100, 4000, 30000, 70000])
        elif c == 6:
            p = p.rstrip('/') + '/'
        elif c == 7:
            p = p.replace('/api/v1', r.choice(['/api//v1', '/api/v1/.', '/%61pi/v1', '/api/v1%2f']), 1)
        else:
            p = p.upper() if r.random() < 0.5 else p[:i]
        return p.encode('latin-1', 'replace')

    # ---- query ----
    def query(self):
        r = self.r
        if self.chance(0.5):
            return b''
        pairs = []
        for _ in range(r.choice([1, 1, 2, 3, 8, 60])):
            k = r.choice(QKEYS)
            v = r.choice([
                r.choice(FORMATS), self.number_text(), r.choice(STATUSES), self.worker_id(),
                r.choice(['true', 'false', '1', '0', 'yes']), r.choice(['*', '[', '*a*a*a*a*a*b', '?', '[!]']),
                'x' * r.choice([10, 100, 2000]), 'root', '%ff%fe', '%00', '', None])
            pairs.append(k if v is None else '%s=%s' % (k, v))
        q = '?' + '&'.join(pairs)
        if self.chance(0.1):
            q += r.choice(['&', '&&', '=', '#frag', '?', '%'])
        return q.encode('latin-1', 'replace')

    # ---- bodies ----
    def json_value(self, depth=0):
        r = self.r
        c = r.randrange(10 if depth < 5 else 6)
        if c == 0:
            return None
        if c == 1:
            return r.choice([True, False])
        if c == 2:
            return r.choice([0, -1, 1, 2 ** 53, 2 ** 63 - 1, -2 ** 63, 1.5, 1e308, -1e-308, 0.000001])
        if c in (3, 4, 5):
            return r.choice(['', 'cpu', '1s', '30s', '500ms', '1h', '99999999999h', 'x' * r.randint(0, 300),
                             '\u00e9\u4e2d\U0001f600', '\ud800', '\x00', '\n\t"\\', '1e9', '-1s'])
        if c in (6, 7):
            return [self.json_value(depth + 1) for _ in range(r.randint(0, 4))]
        return {r.choice(['worker', 'mode', 'duration', 'interval', 'format', 'threads', 'name',
                          'expires_in', 'x', '']): self.json_value(depth + 1) for _ in range(r.randint(0, 5))}

    def instance_body(self):
        r = self.r
        o = {}
        if self.chance(0.9):
            o['worker'] = r.choice(WORKERS) if self.chance(0.6) else self.worker_id()
        if self.chance(0.7):
            o['mode'] = r.choice(MODES)
        if self.chance(0.7):
            o['duration'] = r.choice(['1s', '500ms', '2s', 1, 0.5, 3, '0', 0, -1, '1h', 1e308, 'x', '',
                                      True, None, [], '18446744073709551615s', 1e6, 86400])
        if self.chance(0.3):
            o['interval'] = r.choice(['10ms', '1000us', '1ms', '512k', '1m', '0', '1', 'x', '99999999999999999999',
                                      '-5', '1e9', ''])
        if self.chance(0.3):
            o['format'] = r.choice(FORMATS)
        if self.chance(0.2):
            o['threads'] = r.choice([True, False, 1, 'yes', None])
        if self.chance(0.1):
            o[r.choice(['durration', 'pid', 'x', ''])] = 1
        return o

    def body(self, path):
        r = self.r
        c = r.randrange(14)
        if c < 3:
            return b''
        if c < 6:
            if b'session' in path and c < 5:
                v = {'user': r.choice(['root', 'nobody', '', 'x' * r.choice([63, 64, 300]), 'a b',
                                       '\u00e9', 'a\u0000b', 1, None]),
                     'password': r.choice(['x', '', 'y' * r.choice([1024, 1025, 100000]), 'a\u0000b',
                                           2, None])}
            elif b'instances' in path or c == 5:
                v = self.instance_body()
            else:
                v = {'name': r.choice(['ci', '', 'x' * r.choice([64, 65, 300]), 1, None, '\u00e9']),
                     'expires_in': r.choice(['90d', '12h', '1s', '0', '367d', 'x', 5, None, '-1d'])}
            return json.dumps(v, ensure_ascii=self.chance(0.5)).encode('utf-8', 'surrogatepass')
        if c == 6:
            return json.dumps(self.json_value(), ensure_ascii=False).encode('utf-8', 'surrogatepass')
        if c == 7:   # deep nesting
            n = r.choice([100, 2000, 20000, 60000])
            o, e = r.choice([('[', ']'), ('{"a":', '}')])
            return (o * n + '1' + e * n).encode()
        if c == 8:   # huge strings
            n = r.choice([1000, 60000, 65536, 70000, 300000])
            return b'{"worker": "' + b'x' * n + b'"}'
        if c == 9:   # invalid UTF-8
            return b'{"worker": "' + r.choice([b'\xff\xfe', b'\xc0\xaf', b'\xed\xa0\x80', b'\xe2\x82',
                                                b'\xf8\x88\x80\x80\x80', b'\x80']) + b'", "mode": "cpu"}'
        if c == 10:  # huge numbers
            return r.choice([b'{"duration": 1e999}', b'{"duration": 123456789012345678901234567890}',
                             b'{"duration": -0}', b'{"duration": 1e-400}', b'{"threads": 1e999999999}',
                             b'{"worker": 18446744073709551616}', b'9' * 5000])
        if c == 11:  # NULs
            return b'{"worker": "a\x00b"}' if self.chance(0.5) else b'\x00' * r.randint(1, 10)
        if c == 12:
            return b'{"worker": "%s", "worker": "%s"}' % (r.choice(WORKERS).encode(), b'1-1')
        return self.junk(r.randint(1, 200))

    # ---- a whole request ----
    def method(self):
        r = self.r
        c = r.random()
        if c < 0.9:
            return r.choice(['GET'] * 6 + ['POST'] * 5 + ['DELETE'] * 2 +
                            ['PUT', 'PATCH', 'HEAD', 'OPTIONS'])
        return r.choice(['get', 'CONNECT', 'TRACE', 'BREW', 'G ET', '', 'X' * 5000,
                         self.junk(r.randint(1, 10), 'ABCXYZ!#$%&*+-.^_|~'),
                         self.junk(r.randint(1, 6)).decode('latin-1')])

    def request(self):
        r = self.r
        method = self.method()
        path = self.path() + self.query()
        version = r.choice(['HTTP/1.1'] * 17 + ['HTTP/1.0'] * 2 +
                           [r.choice(['HTTP/9.9', 'HTTP/2.0', 'HTTP/1.1x', '', 'FOO/1.1', 'HTTP/1',
                                      'HTTP/1.1 x', 'http/1.1', 'HTTP/0.9'])])
        eol = b'\r\n' if self.chance(0.95) else b'\n'
        body = self.body(path) if method not in ('GET', 'HEAD') or self.chance(0.1) else b''
        headers = []
        if self.chance(0.95):
            headers.append(HOST_HEADER)
        if body and self.chance(0.7):
            headers.append(b'Content-Type: application/json')
        # incomplete: the request announces more than it sends, and a
        # server rightly waits for the rest (until request_timeout)
        incomplete = False
        chunked = body and self.chance(0.15)
        if chunked:
            headers.append(b'Transfer-Encoding: chunked')
            body, incomplete = self.chunks(body)
            if self.chance(0.1):
                headers.append(b'Content-Length: %d' % len(body))
        elif body or self.chance(0.1):
            c = r.random()
            if c < 0.8:
                headers.append(b'Content-Length: %d' % len(body))
            else:
                cl = r.choice([
                    b'abc', b'-1', b'1e3', b'99999999999999999999', b'', b' 5', b'0x10', b'2, 2',
                    str(len(body) + r.randint(1, 50)).encode(), str(max(0, len(body) - 3)).encode()])
                headers.append(b'Content-Length: ' + cl)
                incomplete = not re.fullmatch(rb' ?\d+', cl) or int(cl) > len(body)
                if self.chance(0.3):
                    headers.append(b'Content-Length: %d' % len(body))
        if self.chance(0.05):
            headers.append(b'Expect: 100-continue')
        if self.chance(0.3):
            headers.append(b'Connection: ' + r.choice([b'close', b'keep-alive', b'Upgrade', b'x']))
        if self.chance(0.3):
            headers.append(b'Authorization: ' + r.choice([
                b'Bearer nprof_' + self.junk(43, 'abcdefghijklmnopqrstuvwxyzABC0123456789-_').encode(),
                b'Bearer ', b'Bearer', b'Basic cm9vdDo=', b'bearer  x', b'Bearer ' + b'A' * 8000,
                b'Bearer nprof_' + b'x' * 200]))
        if self.chance(0.2):
            headers.append(b'X-Forwarded-User: root')
        if self.chance(0.15):   # a daemon's signature, well-formed or not
            hexd = '0123456789abcdef'
            headers.append(b'X-Nprof-Cluster: ' + r.choice([
                ('v=1;host=a;user=root;uid=0;ts=%d;nonce=%s;sig=%s' % (
                    r.choice([int(time.time() * 1000), 0, 1, 2 ** 63 - 1, -5]),
                    self.junk(32, hexd), self.junk(64, hexd))).encode(),
                ('v=1;host=%s;user=%s;uid=x;ts=1;nonce=;sig=' % (self.junk(80), self.junk(3))).encode(
                    'utf-8', 'replace'),
                b'v=1', b'', b';;;;', b'v=2;host=a', b'v=1;' * 200]))
        c = r.random()
        if c < 0.05:    # huge
            headers.append(b'X-Big: ' + b'b' * r.choice([4000, 20000, 100000]))
        elif c < 0.1:   # many
            headers += [b'X-%d: %d' % (i, i) for i in range(r.choice([50, 200, 2000]))]
        elif c < 0.2:   # junk
            headers.append(r.choice([b'NoColon', b': empty-name', b'X-Ctl: a\x01b\x7f', b'X-Nul: a\x00b',
                                     b' folded: line', b'X-8bit: \xff\xfe', b'X-Sp ace: 1',
                                     b'Host: a', b'Host:', self.junk(r.randint(1, 30))]))
        head = method.encode('latin-1', 'replace') + b' ' + path
        if version:
            head += b' ' + version.encode()
        req = head + eol + b''.join(h + eol for h in headers) + eol + body
        want = 1
        if self.chance(0.03):  # two in one connection
            req += b'GET /api/v1/whoami HTTP/1.1' + eol + HOST_HEADER + eol + eol
            want = 2
        return req, version, method, want, incomplete

    def start_request(self):
        """A well-formed start on the real worker, as root over the
        socket (one() sends it there): a short profile or a thread dump."""
        w = WORKERS[0]
        if self.chance(0.5):
            path, body = '/api/v1/instances', {'worker': w, 'mode': self.r.choice(['cpu', 'wall']),
                                               'duration': '1s'}
        else:
            path, body = '/api/v1/workers/%s/stacks' % w, {}
        data = json.dumps(body).encode()
        req = (b'POST %s HTTP/1.1\r\n%s\r\nContent-Type: application/json\r\n'
               b'Content-Length: %d\r\nConnection: close\r\n\r\n' % (path.encode(), HOST_HEADER,
                                                                      len(data))) + data
        return req, 'HTTP/1.1', 'POST', 1, False

    def chunks(self, body):
        r = self.r
        out = b''
        i = 0
        bad = self.chance(0.3)
        incomplete = False
        while i < len(body):
            n = r.randint(1, 4096)
            piece = body[i:i + n]
            size = b'%x' % len(piece)
            if bad and self.chance(0.3):
                size = r.choice([b'zz', b'-1', b'ffffffffffffffffff', b'', b'%x' % (len(piece) + 7),
                                 b'1;ext=1', b' 1'])
                incomplete = True  # or malformed: either way no promise of a reply
            out += size + b'\r\n' + piece + b'\r\n'
            i += n
        if not (bad and self.chance(0.5)):
            out += b'0\r\n\r\n'
        else:
            incomplete = True
        return out, incomplete


STATUS_RE = re.compile(rb'(?:^|\r?\n)HTTP/1\.[01] (\d{3})')
HEAD_RE = re.compile(rb'HTTP/1\.[01] (\d{3})')
LENGTH_RE = re.compile(rb'(?im)^content-length:[ \t]*(\d+)')

lock = threading.Lock()
stats = {'requests': 0, 'waited': 0, 'raw': [], 'replies': 0, 'no_reply': 0, 'by_status': {}, 'five_xx': 0,
         'five_xx_examples': [], 'hangs': 0, 'hang_examples': [], 'no_error_json': 0,
         'no_error_examples': [], 'max_secs': 0.0}


def shorten(b, n=300):
    if len(b) <= n:
        return repr(b)
    return '%r ...(%d bytes)... %r' % (b[:n // 3], len(b), b[-(n - n // 3):])


def complete(buf, method, want):
    """Whether buf holds want whole replies (by their Content-Length): a
    keep-alive connection may stay open after its reply, half-closed by
    us or not, until the server's idle timeout."""
    i = n = 0
    while n < want:
        h = buf.find(b'\r\n\r\n', i)
        if h < 0:
            return False
        head = buf[i:h]
        m = HEAD_RE.match(head)
        if not m:
            return False
        status, i = int(m.group(1)), h + 4
        if 100 <= status < 200:
            continue
        cl = LENGTH_RE.search(head)
        if (n == 0 and method == 'HEAD') or status in (204, 304):
            length = 0
        elif cl:
            length = int(cl.group(1))
        else:
            return False  # until the server closes
        if len(buf) < i + length:
            return False
        i += length
        n += 1
    return True


def one(gen, start=False):
    req, version, method, want, incomplete = gen.start_request() if start else gen.request()
    unix = start or gen.chance(0.6)
    limit = 2.0 if incomplete else TIMEOUT
    s = socket.socket(socket.AF_UNIX if unix else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(limit)
    t0 = time.monotonic()
    out = b''
    hung = False
    try:
        s.connect(SOCK if unix else (HOST, int(PORT)))
        try:
            s.sendall(req)
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it answered (413, 431...) and closed before taking it all
        while not complete(out, method, want):
            if time.monotonic() - t0 > limit:
                hung = True
                break
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        hung = True
    except OSError:
        pass  # reset, refused (a dead daemon fails the checks that follow)
    finally:
        s.close()
    secs = time.monotonic() - t0
    statuses = [int(m) for m in STATUS_RE.findall(out[:200000])]
    where = 'unix' if unix else 'tcp'
    with lock:
        stats['requests'] += 1
        if not incomplete:
            stats['max_secs'] = max(stats['max_secs'], secs)
        if hung and incomplete:
            stats['waited'] += 1
        elif hung:
            stats['hangs'] += 1
            if len(stats['hang_examples']) < 5:
                stats['hang_examples'].append('%s %.1fs: %s' % (where, secs, shorten(req)))
                stats['raw'].append('%s %s' % (where, base64.b64encode(req).decode()))
        if statuses:
            stats['replies'] += 1
        else:
            stats['no_reply'] += 1
        for st in statuses:
            stats['by_status'][st] = stats['by_status'].get(st, 0) + 1
            protocol_answer = st == 505 and not version.startswith('HTTP/1.')
            if st >= 500 and not protocol_answer:
                stats['five_xx'] += 1
                if len(stats['five_xx_examples']) < 5:
                    stats['five_xx_examples'].append('%s: %s\n  -> %s' % (where, shorten(req), shorten(out, 400)))
                    stats['raw'].append('%s %s' % (where, base64.b64encode(req).decode()))
        # an error in JSON says what it is
        head, _, body = out.partition(b'\r\n\r\n')
        if (statuses and statuses[0] >= 400 and b'application/json' in head and len(statuses) == 1
                and method != 'HEAD'):
            try:
                ok = isinstance(json.loads(body.decode()).get('error'), str)
            except Exception:
                ok = False
            if not ok:
                stats['no_error_json'] += 1
                if len(stats['no_error_examples']) < 5:
                    stats['no_error_examples'].append('%s: %s\n  -> %s' % (where, shorten(req), shorten(out, 400)))


def run(k):
    gen = Gen(SEED * 1000 + k)
    end = time.monotonic() + SECS
    n = 0
    while time.monotonic() < end:
        one(gen, n % START_EVERY == 0)
        n += 1


print('seed %d, %d threads, %.0f s' % (SEED, THREADS, SECS), flush=True)
threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
stats['by_status'] = {str(k): v for k, v in sorted(stats['by_status'].items())}
with open(REPORT, 'w') as f:
    json.dump(stats, f, indent=1)
print('%(requests)d requests, %(replies)d replies, %(no_reply)d without one (%(waited)d incomplete ones '
      'left waiting), %(five_xx)d 5xx, %(hangs)d over 10 s (longest %(max_secs).1f s), '
      '%(no_error_json)d JSON errors without "error"' % stats)
print('statuses: ' + ', '.join('%s: %d' % kv for kv in stats['by_status'].items()))
