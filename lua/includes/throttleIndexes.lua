--[[
  The bucket indexes kept with a throttle's counters (see includes/bucketIndexes): buckets whose window
  has emptied, or whose room has come back, leave them. The indexes of a throttle with a concurrency do not
  expire: a bucket its concurrency holds (a score in the band, includes/bucketIndexes) may be held longer than
  any TTL, and leaves when its jobs end. The including script defines rcall and includes intArg.
]]
-- concurrency: the throttle has one.
local function pruneThrottleIndexes(base, nowMs, longest, concurrency)
  for _, index in ipairs({ ':active', ':full' }) do
    local key = base .. index
    rcall('ZREMRANGEBYSCORE', key, '-inf', intArg(nowMs))
    if concurrency then rcall('PERSIST', key) else rcall('PEXPIRE', key, intArg(2 * longest + 60000)) end
  end
end
