// The cloudevents SDK as the judge of our events: it takes each one as it is
// (strict validation) and gets it back unchanged from both HTTP modes.
import { CloudEvent, HTTP } from 'cloudevents';
import { expect } from 'vitest';
import type { L402Event } from 'l402-paywall/events';

export function expectValidCloudEvent(event: L402Event): void {
  const ce = new CloudEvent<unknown>(event as unknown as Partial<CloudEvent<unknown>>, true);
  expect(ce.validate()).toBe(true);
  for (const message of [HTTP.structured(ce), HTTP.binary(ce)]) {
    const back = HTTP.toEvent(message) as CloudEvent<unknown>;
    expect(back.validate()).toBe(true);
    expect({ ...back.toJSON() }).toEqual({ ...event });
  }
}
