// classifyHost: what a URL's host is by its spelling (the directory's rule,
// and the client's judgement of a name before any DNS answer).
import { describe, expect, it } from 'vitest';
import { classifyHost } from 'l402-paywall/client';

describe('classifyHost', () => {
  it.each([
    ['api.example.com', 'public'],
    ['xn--bcher-kva.example', 'public'],
    ['localhost', 'loopback'],
    ['LOCALHOST.', 'loopback'],
    ['app.localhost', 'loopback'],
    ['router.local', 'private'],
    ['metadata.google.internal', 'private'],
    ['nas.home.arpa', 'private'],
    ['intranet', 'private'],
    ['127.0.0.1', 'loopback'],
    ['[::1]', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['[::ffff:a9fe:a9fe]', 'link-local'],
    ['169.254.169.254', 'link-local'],
    ['10.0.0.5', 'private'],
    ['8.8.8.8', 'public'],
    ['[2606:4700::1111]', 'public'],
    // Looks like an address but is none: a name, judged public (its DNS answer decides).
    ['127.0.0.1.nip.io', 'public'],
  ])('%s is %s', (host, kind) => {
    expect(classifyHost(host)).toBe(kind);
  });

  it('agrees with the WHATWG URL parser on every spelling of an address it canonicalises', () => {
    for (const spelling of ['2130706433', '0x7f.1', '0177.0.0.1', '127.1']) expect(classifyHost(new URL(`http://${spelling}/`).hostname)).toBe('loopback');
    expect(classifyHost(new URL('http://[0:0:0:0:0:ffff:169.254.169.254]/').hostname)).toBe('link-local');
  });
});
