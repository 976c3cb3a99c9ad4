// Why a tool call (mcp-tools.ts) ended without a result, and what a paid one
// paid: a JSON-RPC error the server answered, or an answer that was no MCP
// answer at all. Either carries the receipt of a payment made before it, so a
// caller knows what it paid for nothing (it is never paid again in that call).

/** What a tool call paid, beside its result. */
export interface ToolPaymentReceipt {
  server: string;
  tool: string;
  paymentHash: string;
  /** The invoice's amount, integer msat. */
  amountMsat: number;
  /** Routing fee reported by the wallet, integer msat (0 when another call had paid this invoice). */
  feeMsat: number;
  /** False when another call had already paid this invoice and this call used its proof. */
  paidByThisCall: boolean;
  scheme: 'Payment';
  /** The id of the challenge answered (a session's: the one it was opened with, which with its deposit's preimage spends it: not for logs). */
  challengeId: string;
  /**
   * A tool sold by the prepaid session: what this call did with it (`open`: paid
   * the deposit; `topUp`: paid a top-up; `bearer`: paid nothing, a unit of the
   * deposit was spent). Absent for a call paid alone (charge).
   */
  session?: { action: 'open' | 'topUp' | 'bearer'; sessionId: string };
  /** Why a session the tool also offered was not opened (the wallet cannot make a return invoice): the call was paid alone. */
  sessionNotUsed?: string;
  /** The server's receipt (`_meta["org.paymentauth/receipt"]`), when it sent one for this payment and challenge. */
  serverReceipt?: { challengeId: string; reference: string; timestamp: string };
  /** Why there is no serverReceipt. */
  serverReceiptProblem?: string;
}

/**
 * A tool call that ended without a result, with what it paid before it
 * ended (`receipt`, when it paid): never paid again in that call.
 */
abstract class ToolCallFailure extends Error {
  abstract readonly code: 'MCP_TOOL_ERROR' | 'MCP_TRANSPORT_ERROR';
  constructor(
    message: string,
    readonly receipt: ToolPaymentReceipt | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The server answered a JSON-RPC error (after a payment, `receipt` says what was paid: it is not paid again). */
export class McpToolError extends ToolCallFailure {
  override readonly name = 'McpToolError';
  readonly code = 'MCP_TOOL_ERROR';
  /** The JSON-RPC error code: -32042 payment required, -32043 payment verification failed, -32602 invalid params, … */
  readonly rpcCode: number;
  readonly data: unknown;
  constructor(message: string, rpcCode: number, data: unknown, receipt?: ToolPaymentReceipt, options?: { cause?: unknown }) {
    super(message, receipt, options);
    this.rpcCode = rpcCode;
    this.data = data;
  }
}

/** The server did not answer as an MCP server over Streamable HTTP does: no answer, an HTTP error, too much, not JSON-RPC. */
export class McpTransportError extends ToolCallFailure {
  override readonly name = 'McpTransportError';
  readonly code = 'MCP_TRANSPORT_ERROR';
  /** The HTTP status, when an answer came. */
  readonly status: number | undefined;
  constructor(message: string, status?: number, receipt?: ToolPaymentReceipt, options?: { cause?: unknown }) {
    super(message, receipt, options);
    this.status = status;
  }
}
