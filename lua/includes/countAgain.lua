--[[
  Counts deliveries again that a node lost, as a queue's history (lua/reportQueueHistory-1.lua) or a worker's
  memory (lua/reportDeliveries-1.lua) reports them: each in every limit of its bucket, as if granted agoUs ago
  with the longest lease (so that it counts at least as long as its token could have). Travel time makes a
  delivery look more recent than it was: the safe direction.
  A bucket's counters are its throttle's published limits (includes/bucketCounters); grants of the Grantor API,
  whose throttles may have no worker to publish them, name each counter's N and W instead (countCountersAgain).
  Needs includes/bucketCounters (and what it needs); the caller saves the counters (saveBucketCounters).
]]

-- Counts `count` as granted agoUs ago with the longest lease, in each counter: it is released then plus its window.
local function countReleasedAgain(counters, now, agoUs, count, hmaxUs)
  for _, counter in ipairs(counters) do addTokensReleasedAt(counter, now - agoUs + counter.g.windowMs * 1000 + hmaxUs, count) end
end

-- ARGV from `at`: B, then per bucket: bucket id, S, then S pairs (agoUs, count). Returns the deliveries counted,
-- and where the ARGV after them begins.
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
        local count = tonumber(ARGV[at + 2 * s + 1])
        countReleasedAgain(counters, now, tonumber(ARGV[at + 2 * s]), count, hmaxUs)
        counted = counted + count
      end
    end
    at = at + 2 + 2 * slots
  end
  return counted, at
end

-- ARGV from `at`: C, then per window counter: bucket id, N, W (ms), S, then S pairs (agoUs, count); each counter
-- is saved here (the caller flushes bucketIndexes). Returns the grants counted.
local function countCountersAgain(throttlePrefix, at, now, hmaxUs)
  local counted = 0
  for _ = 1, tonumber(ARGV[at]) do
    local bucket = parseBucketId(ARGV[at + 1])
    local base = throttleBase(throttlePrefix, bucket.name)
    local head, tail = counterKeyParts(base, ARGV[at + 3])
    local counter = loadCounter(head .. bucket.bucket .. tail, tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]), now)
    counter.statsBase, counter.bucket = base, bucket.bucket
    local alone = { counter }
    local slots = tonumber(ARGV[at + 4])
    for s = 1, slots do
      local count = tonumber(ARGV[at + 4 + 2 * s])
      countReleasedAgain(alone, now, tonumber(ARGV[at + 3 + 2 * s]), count, hmaxUs)
      counted = counted + count
    end
    saveCounter(counter)
    at = at + 4 + 2 * slots
  end
  return counted
end
