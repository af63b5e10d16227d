/**
 * When a bucket next has room for one delivery (ms, Redis clock): the latest of its limits', its rate's and its
 * pause's times; `nowMs` when it has room now. null while a pause without an end holds it: no time can be
 * promised then, room returns only with a resume (ThrottleAdmin.resume), so callers say "when resumed".
 */
export function nextRoomAt(
  limits: readonly { roomAt: number | null }[],
  rate: { roomAt: number | null } | null,
  pausedUntil: number | null | undefined,
  nowMs: number,
): number | null {
  if (pausedUntil === null) return null;
  const times = [...limits.map((l) => l.roomAt), rate?.roomAt ?? null, pausedUntil ?? null].filter((t): t is number => t !== null);
  return times.length > 0 ? Math.max(nowMs, ...times) : nowMs;
}
