/**
 * Sets key to value as the map's newest entry, first dropping the oldest once
 * the map holds `max` entries: a small cache that keeps what was set last.
 */
export function setNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
