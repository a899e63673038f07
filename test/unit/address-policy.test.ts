import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isPublicAddress } from '../../src/platform/net/address-policy.ts';

function assertAll(addresses: string[], expected: boolean): void {
  const wrong = addresses.filter((ip) => isPublicAddress(ip) !== expected);
  assert.deepEqual(wrong, [], `expected isPublicAddress to be ${expected} for these`);
}

describe('isPublicAddress', () => {
  it('accepts globally reachable IPv4 unicast, including the addresses just outside blocked ranges', () => {
    assertAll(
      [
        '8.8.8.8',
        '1.1.1.1',
        '93.184.216.34',
        '9.255.255.255', // just below 10/8
        '11.0.0.0', // just above 10/8
        '100.63.255.255', // just below 100.64/10
        '100.128.0.0', // just above 100.64/10
        '126.255.255.255',
        '128.0.0.0',
        '169.253.255.255',
        '169.255.0.0',
        '172.15.255.255', // just below 172.16/12
        '172.32.0.0', // just above 172.16/12
        '192.0.1.0',
        '192.0.3.0',
        '192.167.255.255',
        '192.169.0.0',
        '198.17.255.255', // just below 198.18/15
        '198.20.0.0', // just above 198.18/15
        '223.255.255.255', // last address before multicast
      ],
      true,
    );
  });

  it('refuses loopback, "this network", private, CGNAT and link-local IPv4', () => {
    assertAll(
      [
        '127.0.0.1',
        '127.255.255.254',
        '127.1.2.3',
        '0.0.0.0',
        '0.255.255.255',
        '10.0.0.1',
        '10.255.255.255',
        '172.16.0.1',
        '172.31.255.255',
        '192.168.0.1',
        '192.168.255.255',
        '100.64.0.1',
        '100.127.255.255',
        '169.254.169.254', // cloud metadata
        '169.254.0.1',
      ],
      false,
    );
  });

  it('refuses multicast, reserved, broadcast, IETF, benchmarking and documentation IPv4 ranges', () => {
    assertAll(
      [
        '224.0.0.1',
        '239.255.255.250',
        '240.0.0.1',
        '255.255.255.255',
        '192.0.0.8',
        '192.0.2.1',
        '198.51.100.7',
        '203.0.113.200',
        '198.18.0.1',
        '198.19.255.255',
        '192.88.99.1',
      ],
      false,
    );
  });

  it('refuses IPv4 spellings that are not canonical dotted decimal (fail closed)', () => {
    assertAll(
      [
        '2130706433', // 127.0.0.1 as one number
        '0x7f.1',
        '0x7f000001',
        '0177.0.0.1', // octal 127
        '017700000001',
        '127.1',
        '127.0.1',
        '010.0.0.1', // 8.0.0.1 or 10.0.0.1 depending on who reads it
        '08.8.8.8',
        '8.8.8.08',
        '8.8.8.8.',
        '8.8.8',
        '8.8.8.8.8',
        '256.1.1.1',
        '1.2.3.-4',
        ' 8.8.8.8',
        '8.8.8.8 ',
        '',
        'localhost',
        'example.com',
      ],
      false,
    );
  });

  it('accepts global IPv6 unicast in any case or compression', () => {
    assertAll(
      [
        '2606:4700:4700::1111',
        '2606:4700:4700:0:0:0:0:1111',
        '2A00:1450:4001:82B::200E',
        '[2606:4700:4700::1111]',
        '2001:4860:4860::8888',
        '2001:200::1', // just past 2001::/23
        '2002:808:808::1', // 6to4 of 8.8.8.8
        '3ffe::1',
      ],
      true,
    );
  });

  it('refuses the unspecified and loopback IPv6 addresses in every spelling', () => {
    assertAll(['::', '::1', '0:0:0:0:0:0:0:1', '0::1', '::0001', '0000:0000::0001', '[::1]', '::0'], false);
  });

  it('refuses unique-local, link-local (with or without zone), site-local and multicast IPv6', () => {
    assertAll(
      [
        'fc00::1',
        'fd12:3456:789a::1',
        'FDFF:FFFF::',
        'fe80::1',
        'fe80::1%eth0',
        'FE80::abcd:1234%25',
        'febf:ffff::1',
        'fec0::1',
        'ff02::1',
        'ff05::1:3',
      ],
      false,
    );
  });

  it('judges IPv4-mapped, -compatible and -translated IPv6 by the IPv4 address inside', () => {
    assertAll(
      [
        '::ffff:127.0.0.1',
        '::FFFF:127.0.0.1',
        '::ffff:7f00:1', // hex form of the line above
        '0:0:0:0:0:ffff:7f00:0001',
        '0:0:0:0:0:ffff:127.0.0.1',
        '::ffff:10.0.0.1',
        '::ffff:a00:1',
        '::ffff:169.254.169.254',
        '::ffff:a9fe:a9fe',
        '::ffff:0.0.0.0',
        '::127.0.0.1', // IPv4-compatible
        '::7f00:1',
        '::192.168.1.1',
        '::ffff:0:10.0.0.1', // IPv4-translated
        '[::ffff:7f00:1]',
      ],
      false,
    );
    assertAll(['::ffff:8.8.8.8', '::ffff:808:808', '::ffff:0:8.8.8.8'], true);
  });

  it('judges NAT64 and 6to4 addresses by the IPv4 address inside', () => {
    assertAll(
      [
        '64:ff9b::127.0.0.1',
        '64:ff9b::a00:1',
        '64:ff9b::192.168.0.1',
        '64:ff9b::a9fe:a9fe',
        '2002:7f00:1::1',
        '2002:a00:1::',
      ],
      false,
    );
    assertAll(['64:ff9b::8.8.8.8', '64:ff9b::808:808'], true);
    assert.equal(isPublicAddress('64:ff9b:1::8.8.8.8'), false, 'the local-use NAT64 prefix is never public');
  });

  it('refuses documentation, Teredo, benchmarking and discard-only IPv6 prefixes', () => {
    assertAll(
      ['2001:db8::1', '2001:DB8:ffff::1', '3fff::1', '2001::1', '2001:2::1', '2001:1ff::1', '100::1'],
      false,
    );
  });

  it('refuses malformed IPv6 text instead of guessing', () => {
    assertAll(
      [
        ':::1',
        '1::2::3',
        '::1:2:3:4:5:6:7:8',
        '1:2:3:4:5:6:7',
        '1:2:3:4:5:6:7:8:9',
        '2606:4700:4700::11111',
        '2606:4700:4700::g',
        '2606:4700:4700::1111:',
        ':2606:4700:4700::1111',
        '::ffff:127.0.0.1:1',
        '::ffff:1.2.3',
        '::1.2.3.4.5',
        '::ffff:01.2.3.4',
        '1.2.3.4::',
        '[2606:4700:4700::1111',
      ],
      false,
    );
  });
});
