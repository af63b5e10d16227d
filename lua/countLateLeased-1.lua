--[[
  Leased delivery's lua/countLateStart-n.lua, on the namespace's grantor: a started job whose processor returned
  from its synchronous start later than its tokens' expiry (the process descheduled after its start check, on a
  machine with every core busy) has the grants its tokens came from count byMs longer in every window of their
  bucket, and the bucket's rate go on byMs later. A grant counts its tokens until grantUs + W + leaseMs, its expiry
  plus W; the start came at most byMs after the earliest expiry of the job's grants, and the grants that could meet
  it within one window come only after that release, so this call, sent as the processor returns, lands before
  them for any pause shorter than the window (countLateStart-n.lua's header gives the proof for one lease).
  Counters are found from the throttle's published limits, as lua/returnLeasedTokens-1.lua finds them.

  Input:
    KEYS[1]  the namespace's registry version key (it names the slot)
    ARGV[1]  the namespace's throttle key prefix
    ARGV[2]  byMs
    ARGV[3]  G, then G groups of 4: bucket id, grantUs, leaseMs (as granted), count
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { nowUs, moved, missed } moved: the groups whose bucket still had counters here; missed: the groups
  whose tokens were no longer counted in a window (their release had passed: a grant since may have used the room,
  and starts around this one may exceed the limit). A rate's grants since cannot be told here (a pool's).
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/bucketCounters"
--- @include "includes/countLonger"

local throttlePrefix = ARGV[1]
local byMs = tonumber(ARGV[2])
local now = nowUs()
local moved, missed = 0, 0
local at = 4
for _ = 1, tonumber(ARGV[3]) do
  local bucket = parseBucketId(ARGV[at])
  local grantUs, leaseMs, count = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
  at = at + 4
  local counters = bucketCounters(throttlePrefix, bucket, now)
  if counters then
    local still = true
    for i = 1, #counters do
      if not countTokensLonger(counters[i], grantUs, leaseMs, leaseMs + byMs, now, count) then still = false end
    end
    if not still then missed = missed + 1 end
    -- A forgotten TAT is not written again: the grant's own TAT is not known here (its tokens were leased in a pool).
    if counters.rate then rateKind.countLater(counters.rate.key, 0, byMs * 1000, leaseMs + byMs, now) end
    moved = moved + 1
  end
end
saveBucketCounters()
return { now, moved, missed }
