// Passwords (docs/accounts.md): scrypt hashes with a salt each, the parameters stored with them, verified in
// constant time; a malformed stored hash matches nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hashPassword, verifyPassword } from '../../src/accounts/passwords.ts';

describe('passwords', () => {
  it('hashes with scrypt and a salt of its own, the parameters in the stored form', async () => {
    const first = await hashPassword('correct horse battery');
    const second = await hashPassword('correct horse battery');
    assert.match(first, /^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    assert.notEqual(first, second, 'each hash has its own salt');
    assert.ok(!first.includes('correct horse'));
  });

  it('verifies the password and only it', async () => {
    const stored = await hashPassword('correct horse battery');
    assert.equal(await verifyPassword('correct horse battery', stored), true);
    assert.equal(await verifyPassword('correct horse batterY', stored), false);
    assert.equal(await verifyPassword('', stored), false);
  });

  it('treats the same text in either Unicode form as the same password', async () => {
    const stored = await hashPassword('caf\u00e9 au lait!');
    assert.equal(await verifyPassword('cafe\u0301 au lait!', stored), true);
  });

  it('verifies hashes made with other parameters (they travel with the hash)', async () => {
    const stored = await hashPassword('parameters move on');
    const [, , , , salt] = stored.split('$');
    const { scryptSync } = await import('node:crypto');
    const key = scryptSync('parameters move on', Buffer.from(salt!, 'base64url'), 16, {
      N: 1024,
      r: 4,
      p: 2,
    });
    assert.equal(
      await verifyPassword('parameters move on', `scrypt$1024$4$2$${salt}$${key.toString('base64url')}`),
      true,
    );
  });

  it('matches nothing against a malformed or hostile stored hash', async () => {
    for (const stored of [
      '',
      'plain text',
      'bcrypt$10$abc$def$ghi$jkl',
      'scrypt$32768$8$1$$',
      'scrypt$0$8$1$c2FsdA$a2V5',
      `scrypt$${2 ** 30}$8$1$c2FsdA$a2V5`, // a cost that would exhaust memory is refused unrun
      'scrypt$x$8$1$c2FsdA$a2V5',
    ]) {
      assert.equal(await verifyPassword('anything', stored), false, stored);
    }
  });
});
