// A program that opens a prepaid session with createSessions({ closeOnExit: true }),
// makes three calls and ends without closing it: the session is closed when the
// event loop empties, and the refund is credited before the process exits.
// Prints one line of JSON on exit: the ledger's record and the budget's spending.
import { createBudget, createSessions, fetchWithL402, providerWallet, type Wallet } from '../../src/client.js';
import { createDevNode, memoryDevNodeStore } from '../../src/backends.js';
import { memoryReplayStore, withL402 } from '../../src/index.js';
import { lightningSessions } from '../../src/lightning.js';
import { memorySessionLedger } from '../../src/schemes/session/memory-ledger.js';

const net = memoryDevNodeStore();
const server = createDevNode({ store: net });
const node = createDevNode({ store: net });
const ledger = memorySessionLedger();
const handler = withL402(() => Response.json({ ok: true }), {
  priceSats: 1,
  provider: server,
  secret: 'session-exit-child-secret-0123456789abcdef0123456',
  replayStore: memoryReplayStore(),
  session: lightningSessions({ unitPriceSats: 1, ledger, idleTimeoutSeconds: 600 }),
});
const fetch = (input: string | URL | Request, init?: RequestInit) => handler(input instanceof Request ? input : new Request(input, init));
const wallet: Wallet = {
  network: 'regtest',
  payInvoice: ({ invoice }) => node.pay(invoice),
  createInvoice: ({ memo }) => node.createAmountlessInvoice({ memo: memo ?? 'refund', expirySeconds: 3600 }),
  lookupInvoice: providerWallet(node).lookupInvoice!,
};
const budget = createBudget({ totalSats: 100 });
const sessions = createSessions({ closeOnExit: true });
let sessionId = '';
for (let i = 0; i < 3; i++) await fetchWithL402('https://shop.example/x', undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch });
sessionId = sessions.list()[0]!.sessionId;
// Read a moment after the loop first empties (closeOnExit's listener, registered first, has closed the session by then).
let record: unknown = null;
process.once('beforeExit', () => {
  setTimeout(async () => {
    record = await ledger.get(sessionId);
  }, 50);
});
process.on('exit', () => {
  process.stdout.write(`${JSON.stringify({ held: sessions.list().length, spentMsat: budget.spent().totalMsat, record })}\n`);
});
