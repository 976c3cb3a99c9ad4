import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { classifyAddress } from '../../lib/http/outbound.js';
import { LightningAddress, LightningAddressWithLoopback, lightningAddressSchema } from 'l402-paywall/lightning';
import { decodeLnurl, encodeLnurl, LnurlError, lightningAddressUrl, outboundPolicy } from '../../lib/lightning/lnurl.js';
import { payMetadata } from '../../lib/service/money/lnurlp.js';

// LUD-01's own example.
const LUD01_URL = 'https://service.com/api?q=3fc3645b439ce8e7f2553a69e5267081d96dcd340693afabe04be7b0ccd178df';
const LUD01_LNURL =
  'LNURL1DP68GURN8GHJ7UM9WFMXJCM99E3K7MF0V9CXJ0M385EKVCENXC6R2C35XVUKXEFCV5MKVV34X5EKZD3EV56NYD3HXQURZEPEXEJXXEPNXSCRVWFNV9NXZCN9XQ6XYEFHVGCXXCMYXYMNSERXFQ5FNS';

describe('LUD-01 LNURL', () => {
  it("encodes and decodes LUD-01's example", () => {
    expect(encodeLnurl(LUD01_URL)).toBe(LUD01_LNURL);
    expect(decodeLnurl(LUD01_LNURL)).toBe(LUD01_URL);
    expect(decodeLnurl(LUD01_LNURL.toLowerCase())).toBe(LUD01_URL);
    expect(decodeLnurl(`lightning:${LUD01_LNURL}`)).toBe(LUD01_URL);
  });

  it('round-trips long URLs (no 90-character limit) in upper case', () => {
    const url = `https://example.com/.well-known/lnurlp/alice?tag=login&k1=${'ab'.repeat(32)}&action=login&x=${'é'.repeat(40)}`;
    const lnurl = encodeLnurl(url);
    expect(lnurl).toBe(lnurl.toUpperCase());
    expect(lnurl.length).toBeGreaterThan(90);
    expect(decodeLnurl(lnurl)).toBe(url);
  });

  it('refuses a bad checksum, mixed case and another prefix', () => {
    const badChecksum = LUD01_LNURL.slice(0, -1) + (LUD01_LNURL.endsWith('S') ? 'Q' : 'S');
    for (const text of [
      badChecksum,
      'LNURL1' + LUD01_LNURL.slice(6).toLowerCase(),
      'lnbc1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypq',
      '',
    ]) {
      expect(() => decodeLnurl(text)).toThrow(LnurlError);
    }
  });
});

describe('address classes (what the outbound client refuses)', () => {
  it.each([
    ['8.8.8.8', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fd00:ec2::254', 'private'], // AWS IMDS over IPv6
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a00:1', 'private'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['169.254.169.254', 'link-local'], // cloud metadata
    ['::ffff:169.254.169.254', 'link-local'],
    ['2002:a9fe:a9fe::', 'link-local'], // 6to4 of 169.254.169.254
    ['fe80::1', 'link-local'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.100.100.200', 'shared (CGNAT)'], // Alibaba metadata
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], // Teredo
    ['not-an-ip', 'reserved'],
  ])('%s is %s', (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind);
  });

  it('172.32.0.1 and 2002:0808:0808:: (6to4 of 8.8.8.8) are public', () => {
    expect(classifyAddress('172.32.0.1')).toBe('public');
    expect(classifyAddress('2002:808:808::')).toBe('public');
  });
});

describe('Lightning Address schemas', () => {
  it('production refuses loopback hosts; development accepts them; both accept public ones', () => {
    for (const local of ['alice@127.0.0.1:3000', 'alice@localhost:3000', 'alice@[::1]:3000', 'Alice@LOCALHOST']) {
      expect(LightningAddress.safeParse(local).success).toBe(false);
      expect(lightningAddressSchema({ allowLoopback: false }).safeParse(local).success).toBe(false);
      expect(LightningAddressWithLoopback.safeParse(local).success).toBe(true);
    }
    for (const schema of [LightningAddress, LightningAddressWithLoopback]) {
      expect(schema.parse(' Alice@Example.COM ')).toBe('alice@example.com');
      expect(schema.safeParse('alice@10.0.0.1').success).toBe(false);
      expect(schema.safeParse('alice@169.254.169.254').success).toBe(false);
      expect(schema.safeParse('alice@127.0.0.1.evil.com').success).toBe(true); // a public name: DNS decides, and the outbound client checks that
      expect(schema.safeParse('alice@127.0.0.999').success).toBe(false);
      expect(schema.safeParse('alice').success).toBe(false);
    }
  });

  it('maps an address to its LUD-16 URL: https for public hosts, http only for loopback in development', () => {
    expect(lightningAddressUrl('alice@example.com', false)).toBe('https://example.com/.well-known/lnurlp/alice');
    expect(lightningAddressUrl('alice@127.0.0.1:3000', true)).toBe('http://127.0.0.1:3000/.well-known/lnurlp/alice');
    expect(() => lightningAddressUrl('alice@127.0.0.1:3000', false)).toThrow(expect.objectContaining({ code: 'ADDRESS_INVALID', retryable: false }));
    expect(() => lightningAddressUrl('alice@example.com:99999', false)).toThrow(expect.objectContaining({ code: 'ADDRESS_INVALID' }));
  });
});

describe('configuration', () => {
  const base = { L402_SECRET: 's'.repeat(32), DEV_NODE_PRIVATE_KEY: '11'.repeat(32) };

  it('production never allows loopback; development does; limits come from the environment', () => {
    const production = outboundPolicy(loadConfig({ ...base, NODE_ENV: 'production' }));
    expect(production).toEqual({ allowLoopback: false, timeoutMs: 5000, maxBytes: 65536 });
    const development = outboundPolicy(loadConfig({ ...base, OUTBOUND_TIMEOUT_MS: '1200', OUTBOUND_MAX_BYTES: '4096' }));
    expect(development).toEqual({ allowLoopback: true, timeoutMs: 1200, maxBytes: 4096 });
  });

  it('LNURLP_USERNAMES: unset serves any username in development and none in production', () => {
    expect(loadConfig(base).lnurlp.usernames).toBeNull();
    expect(loadConfig({ ...base, VERCEL: '1' }).lnurlp.usernames).toEqual([]);
    expect(loadConfig({ ...base, VERCEL: '1', LNURLP_USERNAMES: 'fees, tips' }).lnurlp.usernames).toEqual(['fees', 'tips']);
    expect(() => loadConfig({ ...base, LNURLP_USERNAMES: 'Not Valid' })).toThrow(/LNURLP_USERNAMES/);
  });
});

describe('the service metadata', () => {
  it('is a LUD-06 array with text/plain and the LUD-16 text/identifier', () => {
    expect(JSON.parse(payMetadata('alice', 'Pay.Example.com'))).toEqual([
      ['text/plain', 'Payment to alice@pay.example.com'],
      ['text/identifier', 'alice@pay.example.com'],
    ]);
  });
});
