/**
 * A bucket's concurrency counter as throttleBucket reports it (lua/includes/inFlightCounter.lua): '#' is every
 * unit counted, jobs of exact delivery and holds ('~<worker>') of workers in leased delivery alike.
 */
export function readInFlight(max: number, fields: Record<string, string>): { max: number; counted: number; leased: number } {
  let leased = 0;
  for (const [field, value] of Object.entries(fields)) if (field.startsWith('~')) leased += Number(value);
  return { max, counted: Number(fields['#'] ?? 0), leased };
}
