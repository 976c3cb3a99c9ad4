// Who a client address stands for in a per-client budget (lib/http/input.ts clientNetwork).
import { describe, expect, it } from 'vitest';
import { clientNetwork } from '../../lib/http/input.js';

describe('clientNetwork', () => {
  it('an IPv4 address is its own client', () => {
    expect(clientNetwork('203.0.113.7')).toBe('203.0.113.7');
    expect(clientNetwork('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('every IPv6 address of one /64 is one client, however it is written', () => {
    const one = ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:fffe', '2001:0DB8:0001:0002:0:0:0:9', '2001:db8:1:2:0:0:1.2.3.4'].map(clientNetwork);
    expect(new Set(one)).toEqual(new Set(['2001:db8:1:2::/64']));
    expect(clientNetwork('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(clientNetwork('::1')).toBe('0:0:0:0::/64');
  });

  it('anything else (the "unknown" of a request with no address) stays as it is', () => {
    expect(clientNetwork('unknown')).toBe('unknown');
    expect(clientNetwork('')).toBe('');
  });
});
