// Where the embedded dev node and its wallet work: outside production only.
// "Production" is any NODE_ENV but unset, `development` or `test`, exactly as
// the hosted service decides it: a misspelt or unusual value (`prod`,
// `staging`, `Production`) counts as production. `next start` sets
// NODE_ENV=production; `next dev` sets development.

/**
 * NODE_ENV where there is a `process` (Node, Next.js's edge runtime, Bun, Deno);
 * undefined where there is none (Workers); null where reading it is refused
 * (Deno run without --allow-env for it throws).
 */
function nodeEnv(): string | undefined | null {
  try {
    return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.NODE_ENV;
  } catch {
    return null;
  }
}

/**
 * NODE_ENV when it counts as production (then the dev node and its wallet
 * refuse); undefined when they may run. A NODE_ENV the runtime will not let us
 * read counts as production for the wallet's handlers, which mint money
 * (`unreadable: 'production'`, the default), and not for the dev node, whose
 * invoices cost nothing (`'local'`).
 */
export function productionNodeEnv(unreadable: 'production' | 'local' = 'production'): string | undefined {
  const environment = nodeEnv();
  if (environment === null) return unreadable === 'production' ? 'not readable here' : undefined;
  return environment === undefined || environment === 'development' || environment === 'test' ? undefined : environment;
}

/**
 * The dev node asked to make an invoice or pay under a production NODE_ENV.
 * Its invoices are regtest and its money fake: a paywall selling them would
 * sell nothing, silently. withL402 answers 503 DEV_NODE_IN_PRODUCTION with
 * this message, and onError hears it, on every request that would sell.
 */
export class DevNodeInProduction extends Error {
  override readonly name = 'DevNodeInProduction';
  /** The paywall's 503 code. */
  readonly code = 'DEV_NODE_IN_PRODUCTION';
  /** The setting that decides it. */
  readonly setting = 'NODE_ENV';
  constructor(environment: string) {
    super(
      `The embedded dev node (createDevNode) makes no invoices and pays nothing in production, and NODE_ENV is ${JSON.stringify(environment)}: ` +
        'its invoices are regtest, its money fake. Use a real Lightning backend (l402-paywall/backends); the dev node runs only where NODE_ENV is unset, development or test',
    );
  }
}

/** Throws DevNodeInProduction under a production NODE_ENV. */
export function refuseInProduction(): void {
  const environment = productionNodeEnv('local');
  if (environment !== undefined) throw new DevNodeInProduction(environment);
}
