// The rate limiters count per clock minute (a fixed or a sliding window of
// 60 s), so a test that counts requests up to a limit must not cross a
// minute's end. Near one, the clock is moved on to the next minute rather than
// waited for (up to 15 s of a test file's time): Date only, running on from
// there in step with real time, so timers, sockets and the servers' own waits
// are untouched. The local server runs in the test's process, so its limiters
// read this clock.
import { vi } from 'vitest';

/**
 * Makes sure the current clock minute has at least `60 s - latestIntoMinuteMs`
 * left; call useRealClock() (afterAll) to go back. Answers whether the clock was moved.
 */
export function startWellInsideMinute(latestIntoMinuteMs: number): boolean {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute <= latestIntoMinuteMs) return false;
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  vi.setSystemTime(Date.now() - intoMinute + 60_000 + 50);
  return true;
}

/** Back to the real clock (a no-op when it was not moved). */
export function useRealClock(): void {
  vi.useRealTimers();
}
