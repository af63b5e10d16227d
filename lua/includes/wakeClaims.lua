--[[
  Wake claims: when a full bucket's room returns, one waiting caller looks, not every one.

  Invariant: each caller a delivery script tells to wait for a bucket's window room is told a moment at least one
  window slot after the last one told for that bucket, until the spread below is used up; it is told the room's
  return or a later moment, never an earlier one, and never more than MAX_SPREAD_US later.

  Why: every worker waiting on a bucket shared across queues and processes was told the moment its room
  returns, and each asked at that moment, although the room returning in one window slot fills one caller's
  slots: ten queues of two workers each sharing limit(2000, '1s') made 1.5 delivery calls per delivered job,
  two in three of them delivering nothing. A bucket's `:wk` (STRING, us) is the latest moment handed out; a
  caller told to wait for room at atUs is told atUs when that is a slot or more after the claim, else the claim
  plus one window slot (when the next room returns; a release time falls anywhere in its slot), so successive callers come one room return apart and each finds the room
  that returned since the one before. A window's room, once returned, stays until taken, so a caller that comes
  late, or not at all, delays that room by a slot and loses none of it; a caller served, or woken by anything
  else (a job ending, a put-back, a new job), asks again at once as before. Past MAX_SPREAD_US (or
  MAX_STAGGER slots) the round starts again at atUs: a deeper stagger would keep slots idle that a burst of
  returning room could fill, and a long window's slot (16 s for an hour) is no moment to wait.
  A rate keeps no missed emission beyond its burst (includes/rateCounter), so a bucket with a rate is not
  staggered: a caller that came late would lose the rate's room (a rate of 40/s with a burst of 8, shared by
  three processes, sustained 0.80 of n/per staggered, 0.999 not). A concurrency's room returns when jobs end,
  which wakes its waiters (includes/wakeBucket): no claim either.
  The claim expires a slot after its moment (PX), so an idle bucket keeps no key.

  Needs includes/schedulerKeys (throttleBase) and includes/intArg.
]]
local wakeClaims = { MAX_STAGGER = 64, MAX_SPREAD_US = 50000 }

-- The time between two room returns of the bucket's windows (us; their shortest slot), 0 when it is not staggered.
function wakeClaims.stepUs(counters)
  if counters.rate then return 0 end
  local step = 0
  for i = 1, #counters do
    local slot = counters[i].g.slot
    if step == 0 or slot < step then step = slot end
  end
  return step
end

-- When this caller should look for room in `bucket`, whose room returns at atUs (> nowUs).
function wakeClaims.claim(throttlePrefix, bucket, counters, atUs, nowUs)
  local step = wakeClaims.stepUs(counters)
  if step <= 0 or step > wakeClaims.MAX_SPREAD_US then return atUs end
  local key = throttleBase(throttlePrefix, bucket.name) .. ':b:' .. bucket.bucket .. ':wk'
  local claimed = tonumber(rcall('GET', key)) or 0
  local at = atUs
  local next = claimed + step
  if next > atUs and next <= atUs + wakeClaims.MAX_STAGGER * step and next <= atUs + wakeClaims.MAX_SPREAD_US then at = next end
  -- Kept a slot past its moment: a caller after that is told the room's return, which comes after now.
  rcall('SET', key, intArg(at), 'PX', math.ceil((at - nowUs + step) / 1000) + 1)
  return at
end
