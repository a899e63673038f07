// Test-only preload for a service process (NODE_OPTIONS=--import <this file>): the name in
// MF_TEST_REBIND_NAME rebinds. Its first lookup answers a public address (where nothing will answer here),
// every later one 127.0.0.1, as a hostile DNS server would between a check and the connection. Both lookup
// APIs answer so: a connection that resolved the name again itself would reach loopback. Other names
// resolve as usual.
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';

const name = process.env.MF_TEST_REBIND_NAME;
let lookups = 0;
const answer = () => ({ address: lookups++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 });

const promised = dns.promises.lookup;
dns.promises.lookup = (hostname, options) => {
  if (hostname !== name) return promised(hostname, options);
  const address = answer();
  return Promise.resolve(options?.all ? [address] : address);
};

const callback = dns.lookup;
dns.lookup = (hostname, options, done) => {
  if (hostname !== name) return callback(hostname, options, done);
  const reply = typeof options === 'function' ? options : done;
  const address = answer();
  const all = typeof options === 'object' && options?.all;
  process.nextTick(() => (all ? reply(null, [address]) : reply(null, address.address, address.family)));
};

syncBuiltinESMExports(); // `import { lookup } from 'node:dns/promises'` now sees these
