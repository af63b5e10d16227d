--[[
  The bucket indexes kept with a throttle's counters (see includes/bucketIndexes): buckets whose window
  has emptied, or whose room has come back, leave them. An index holding a bucket its concurrency holds (a
  score in the band) does not expire: its jobs may run longer than any TTL, and leave it when they end. The
  including script defines rcall and includes intArg.
]]
--- @include "bucketIndexes"
-- concurrency: the throttle has one (only then may an index hold band scores).
local function pruneThrottleIndexes(base, nowMs, longest, concurrency)
  for _, index in ipairs({ ':active', ':full' }) do
    local key = base .. index
    rcall('ZREMRANGEBYSCORE', key, '-inf', intArg(nowMs))
    if concurrency and rcall('ZCOUNT', key, intArg(bucketIndexes.BAND), '+inf') > 0 then
      rcall('PERSIST', key)
    else
      rcall('PEXPIRE', key, intArg(2 * longest + 60000))
    end
  end
end
