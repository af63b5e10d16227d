--[[
  Counts deliveries again that a node lost, as a queue's history (lua/reportQueueHistory-1.lua) or a worker's
  memory (lua/reportDeliveries-1.lua) reports them: each in every limit of its bucket, as if granted agoUs ago
  with the longest lease (so that it counts at least as long as its token could have). Travel time makes a
  delivery look more recent than it was: the safe direction.
  Needs includes/bucketCounters (and what it needs); the caller saves the counters (saveBucketCounters).
]]

-- ARGV from `at`: B, then per bucket: bucket id, S, then S pairs (agoUs, count). Returns the deliveries counted.
local function countAgain(throttlePrefix, at, now, hmaxUs)
  local counted = 0
  local buckets = tonumber(ARGV[at])
  at = at + 1
  for _ = 1, buckets do
    local bucket = parseBucketId(ARGV[at])
    local slots = tonumber(ARGV[at + 1])
    local counters = bucketCounters(throttlePrefix, bucket, now)
    if counters then
      for s = 1, slots do
        local agoUs, count = tonumber(ARGV[at + 2 * s]), tonumber(ARGV[at + 2 * s + 1])
        for _, counter in ipairs(counters) do
          addTokensReleasedAt(counter, now - agoUs + counter.g.windowMs * 1000 + hmaxUs, count)
        end
        counted = counted + count
      end
    end
    at = at + 2 + 2 * slots
  end
  return counted
end
