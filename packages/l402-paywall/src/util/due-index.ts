// Ids ordered by when they fall due: an in-process sorted set, the way Redis
// keeps the session ledger's indexes (ZADD, ZREM, ZRANGEBYSCORE -inf now).
// A binary min-heap with each id's place kept, so setting, moving or removing
// an id is O(log n), and asking what is due looks only at what is due (and the
// heap nodes just below it), never at the rest.

interface Slot {
  id: string;
  at: number;
}

// Earlier first; at the same time by id, as Redis orders members of one score.
const before = (a: Slot, b: Slot) => a.at < b.at || (a.at === b.at && a.id < b.id);

export class DueIndex {
  readonly #heap: Slot[] = [];
  readonly #place = new Map<string, number>();
  /** Heap nodes looked at by due() and takeDue() so far: the work the sweeps did. */
  visits = 0;

  get size(): number {
    return this.#heap.length;
  }

  has(id: string): boolean {
    return this.#place.has(id);
  }

  /** Puts `id` at time `at` (moving it there when it is already in). */
  set(id: string, at: number): void {
    const index = this.#place.get(id);
    if (index === undefined) {
      this.#heap.push({ id, at });
      this.#place.set(id, this.#heap.length - 1);
      this.#up(this.#heap.length - 1);
      return;
    }
    const slot = this.#heap[index]!;
    if (slot.at === at) return;
    slot.at = at;
    this.#down(this.#up(index));
  }

  delete(id: string): void {
    const index = this.#place.get(id);
    if (index === undefined) return;
    this.#place.delete(id);
    const last = this.#heap.pop()!;
    if (index === this.#heap.length) return;
    this.#heap[index] = last;
    this.#place.set(last.id, index);
    this.#down(this.#up(index));
  }

  /** The ids due at `now` (time <= now), earliest first, at most `limit`; they stay in. */
  due(now: number, limit: number): string[] {
    const found: string[] = [];
    // The heap's smallest k, found by walking down from the root: a node is
    // looked at only when its parent was due, so the work is about 2k + 1.
    const frontier: number[] = this.#heap.length > 0 ? [0] : [];
    while (found.length < limit && frontier.length > 0) {
      let pick = 0;
      for (let i = 1; i < frontier.length; i++) if (before(this.#heap[frontier[i]!]!, this.#heap[frontier[pick]!]!)) pick = i;
      const index = frontier[pick]!;
      frontier[pick] = frontier[frontier.length - 1]!;
      frontier.pop();
      const slot = this.#heap[index]!;
      this.visits += 1;
      if (slot.at > now) break;
      found.push(slot.id);
      for (const child of [2 * index + 1, 2 * index + 2]) if (child < this.#heap.length) frontier.push(child);
    }
    return found;
  }

  /** Takes out every id due at `now`, earliest first. */
  takeDue(now: number): string[] {
    const taken: string[] = [];
    while (this.#heap.length > 0) {
      this.visits += 1;
      const root = this.#heap[0]!;
      if (root.at > now) break;
      taken.push(root.id);
      this.delete(root.id);
    }
    return taken;
  }

  #up(index: number): number {
    const heap = this.#heap;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!before(heap[index]!, heap[parent]!)) break;
      this.#swap(index, parent);
      index = parent;
    }
    return index;
  }

  #down(index: number): void {
    const heap = this.#heap;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let least = index;
      if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
      if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
      if (least === index) return;
      this.#swap(index, least);
      index = least;
    }
  }

  #swap(a: number, b: number): void {
    const heap = this.#heap;
    const slot = heap[a]!;
    heap[a] = heap[b]!;
    heap[b] = slot;
    this.#place.set(heap[a]!.id, a);
    this.#place.set(heap[b]!.id, b);
  }
}
