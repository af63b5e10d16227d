--[[
  Renews, lowers or drops what one leased worker holds of its throttles' concurrency (includes/inFlightCounter):
  each bucket's hold becomes the units the worker says it holds (its jobs in flight and the free units it
  keeps), lapsing a lifetime from now unless renewed again. The worker is the only writer of its holds and
  makes one such call (or one grant, lua/leaseTokens-1.lua) at a time, so what it says is what it holds: a
  grant whose reply it lost, counted here but unknown to it, stops counting at its next renewal.
  A lowered hold wakes the exact queues whose classes wait on the bucket, as a job's release does; leased
  workers waiting ask again when the grantor said they could (within a second: includes/inFlightCounter).

  Input:
    KEYS[1]  the namespace's registry version key (it names the slot)
    ARGV[1]  the namespace's throttle key prefix   ARGV[2] the worker's id (the holder)
    ARGV[3]  a hold's lifetime (ms)   ARGV[4] H, then H pairs: bucket id, units held (0: none)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { nowMs, the units this node counted for the worker before, summed over the buckets named }
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/bucketCounters"

local throttlePrefix, holder, holdMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = nowUs()
local nowMs = math.floor(now / 1000)
local before = 0
local at = 5
for _ = 1, tonumber(ARGV[4]) do
  local bucket, units = parseBucketId(ARGV[at]), tonumber(ARGV[at + 1])
  at = at + 2
  local counters = bucketCounters(throttlePrefix, bucket, now)
  -- A throttle no longer declared, or without a concurrency now, counts no hold.
  if counters and counters.inFlight then
    local inFlight = counters.inFlight
    local old = tonumber(rcall('HGET', inFlight.key, '~' .. holder)) or 0
    before = before + old
    setHold(inFlight, holder, units, nowMs + holdMs)
    if units < old then wakeWaiting(inFlight.key, bucket.id, now) end
  end
end
saveBucketCounters()
return { nowMs, before }
