// Preloaded with `node --import` into a server the tests start as a child
// process: fetch() to anything but loopback fails at once, as on a machine
// without internet, so no test reaches the internet whatever the server tries.
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) throw new TypeError(`fetch failed (offline test: ${url.hostname} is not reachable)`);
  return realFetch(input, init);
};
