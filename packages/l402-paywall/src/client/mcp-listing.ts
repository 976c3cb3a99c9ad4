// An MCP server's tools (tools/list, every page), each with the price its
// listing states. A paid tool states its price in its `_meta` (a price object
// `{amount, currency: "sat", method?, intents?}` under `dev.l402paywall/price`,
// this library's sellers' key) and in words in its
// description; the price read here is what the listing says, for choosing,
// and never what is paid: a call pays the invoice of its challenge, checked
// against maxPriceSats, whatever the listing said. A hostile listing is read
// within bounds: the answer's bytes (mcp-rpc.ts), its pages, its tools.
import { z } from 'zod';
import { McpTransportError } from './mcp-errors.js';
import type { RpcConnection } from './mcp-rpc.js';

/** A price a tool's listing states. */
export interface ToolPrice {
  /** Whole satoshis: per call (intent charge), or per unit of a prepaid session (intent session). */
  sats: number;
  /** `charge` (each call paid) when the tool is sold so, else how it is sold (`session`: a deposit, spent per call); `charge` when unsaid. */
  intent: string;
  /** Every way it is sold, as stated (`['charge', 'session']`). */
  intents: string[];
  /** The payment method, as stated (`lightning`). */
  method?: string;
  /** The `_meta` key it was read from. */
  key: string;
}

/** A tool as its server lists it. */
export interface PaidTool {
  name: string;
  title?: string;
  description?: string;
  /** The JSON Schema of its arguments. */
  inputSchema?: Record<string, unknown>;
  /** The price its listing states, when it states one this client reads. */
  price?: ToolPrice;
  /** Its `_meta`, as listed. */
  meta?: Record<string, unknown>;
}

/** Pages read at most: a server that keeps handing out cursors does not keep the client listing. */
const MAX_PAGES = 20;
/** Tools kept at most. */
const MAX_TOOLS = 1000;
/** Where a price may be stated in a tool's `_meta`, the first found counting. */
const PRICE_KEYS = ['dev.l402paywall/price', 'org.paymentauth/price', 'price'];

const ToolSchema = z
  .object({
    name: z.string().min(1).max(256),
    title: z.string().max(512).optional(),
    description: z.string().optional(),
    inputSchema: z.record(z.string(), z.unknown()).optional(),
    _meta: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

const PriceSchema = z
  .object({
    amount: z.union([
      z.string().regex(/^[0-9]{1,16}$/),
      z
        .number()
        .int()
        .nonnegative()
        .max(Number.MAX_SAFE_INTEGER / 1000),
    ]),
    currency: z.string().optional(),
    method: z.string().max(64).optional(),
    intent: z.string().max(64).optional(),
    /** How it is sold (this library's tools): `charge`, `session`, or both. */
    intents: z.array(z.string().max(64)).max(8).optional(),
  })
  .loose();

/** Every tool of the server, page after page (at most MAX_PAGES pages and MAX_TOOLS tools); malformed entries are left out. */
export async function readToolList(connection: RpcConnection): Promise<PaidTool[]> {
  const tools: PaidTool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES && tools.length < MAX_TOOLS; page++) {
    const answer = await connection.request('tools/list', cursor === undefined ? {} : { cursor });
    if ('error' in answer) throw new McpTransportError(`${connection.url.host} refused to list its tools: ${answer.error.message}`);
    const list = answer.result.tools;
    if (!Array.isArray(list)) throw new McpTransportError(`${connection.url.host} answered tools/list without a list of tools`);
    for (const entry of list) {
      const tool = ToolSchema.safeParse(entry);
      if (tool.success && tools.length < MAX_TOOLS) tools.push(paidTool(tool.data));
    }
    const next = answer.result.nextCursor;
    if (typeof next !== 'string' || next === '' || next === cursor) break;
    cursor = next.slice(0, 1024);
  }
  return tools;
}

function paidTool(tool: z.infer<typeof ToolSchema>): PaidTool {
  const price = tool._meta && toolPrice(tool._meta);
  return {
    name: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    // A description is for a model to read: a long one is cut rather than fill its context.
    ...(tool.description !== undefined && { description: tool.description.slice(0, 4000) }),
    ...(tool.inputSchema !== undefined && { inputSchema: tool.inputSchema }),
    ...(price && { price }),
    ...(tool._meta !== undefined && { meta: tool._meta }),
  };
}

/** The price a tool's `_meta` states in satoshis, when it states one. */
export function toolPrice(meta: Record<string, unknown>): ToolPrice | undefined {
  for (const key of PRICE_KEYS) {
    const stated = PriceSchema.safeParse(meta[key]);
    if (!stated.success) continue;
    const { amount, currency, method, intent, intents } = stated.data;
    if (currency !== undefined && currency.toLowerCase() !== 'sat') continue;
    const sold = intents && intents.length > 0 ? intents : [intent ?? 'charge'];
    return { sats: Number(amount), intent: sold.includes('charge') ? 'charge' : sold[0]!, intents: sold, ...(method !== undefined && { method }), key };
  }
  return undefined;
}
