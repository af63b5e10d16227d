--[[
  A throttle's concurrency (concurrency(n)) for one bucket: the jobs it delivered that are still between
  delivery and completion, failure, a move to delayed or wait, or removal. Kept in
    <throttle base>:b:<bucket>:c     HASH  '#' -> the sum of the costs below;
                                           <entry> -> the cost of one job in flight (1 until costs come)
    <throttle base>:b:<bucket>:c:q   SET   queue bases whose classes wait on this bucket (woken on a release;
                                           expires a day after the last was added)
    <queue base>:in-flight           HASH  job id -> the counters it is in, as cjson [key, bucket id, ...]
  An entry names its job as #queueBase .. ':' .. queueBase .. jobId (queue bases and job ids may hold ':').

  Holds (leased delivery: lua/leaseTokens-1.lua grants them, lua/renewHolds-1.lua renews and lowers them): a
  worker of a queue outside this slot, or on another Redis, holds units of the bucket for the jobs it runs and
  is about to run, and counts them itself, beside its jobs:
    <throttle base>:b:<bucket>:c     '~<holder>' -> units held (counted in '#' like a job's cost)
    <throttle base>:b:<bucket>:c:h   ZSET '~<holder>' -> ms (this node's clock) the hold lapses unless renewed
  A hold is never read as a job: the entry check below skips it, and a hold past its time is dropped
  whenever the bucket looks full. Its worker starts no job on it past that time (lua/takeLeasedJobs-19.lua).

  Invariant: a job counts from the moment the script that moves it to active adds it (one script: no
  delivery escapes the count) until its entry is removed, and an entry is removed only when its job is gone,
  or holds no lock and is not in its queue's active list. While a worker holds the job's lock, or the job is
  active without one (its worker died, bullmq's stalled check has not taken it back yet), it counts; so at
  most n of the bucket's jobs are ever between delivery and leaving active.
  Entries are removed by releaseInFlight (the worker, as each job it ran ends) and, in case that never comes
  (a crashed worker, a job moved by something else), by a check of a full bucket's entries at most once
  every CHECK_MS: a full bucket's waiters are woken by a release, and by that check at the latest.
  A job delivered again while its old entry stands (it stalled, back to wait, and was delivered anew) has
  its entry replaced, not added to. The keys have no expiry: a job may run for hours; '#' at 0 deletes one.
  The bucket is in its throttle's :active index while it counts anything, and in :full while it counts >= n
  (includes/bucketIndexes, which says how; the counter's fields 'a' and 'f' mark what it entered).
  inFlightKind: the functions every kind has (includes/bucketCounters' header lists them); a bucket's
  concurrency is its counters.inFlight, a throttle's its limits.concurrency (the limits hash's c -> n). What
  comes back is a job, not tokens: its giveBack takes the job out of every counter it is in, by the queue's
  in-flight index, when it ends (or, before it is delivered again, when its end went untold).
  Needs, defined by the including script: rcall, includes intArg. Every key is in the queue's slot (exact
  delivery: the queue's keys and its throttles' share one).
]]
--- @include "bucketIndexes"
-- leasedHolds: { set, add, heldBy, wakeWaiting } (one table: the delivery scripts' main chunk is near Lua's 200 locals).
local inFlightRoom, addInFlight, leasedHolds, inFlightKind
do
local CHECK_MS = 1000
-- A queue that stops waiting on a bucket drops out of its :q within this (a day); one that waits is named again.
local WAITING_TTL_MS = 86400000

-- A queue base ("bull:orders::throttle") -> bullmq's key prefix of that queue ("bull:orders:").
local function bullmqBaseOf(queueBase)
  return string.sub(queueBase, 1, -string.len('::throttle') - 1) .. ':'
end

local function entryOf(queueBase, jobId)
  return #queueBase .. ':' .. queueBase .. jobId
end

-- Whether the job an entry names is still between delivery and leaving active.
local function stillInFlight(entry)
  local colon = string.find(entry, ':', 1, true)
  local length = tonumber(string.sub(entry, 1, colon - 1))
  local queueBase = string.sub(entry, colon + 1, colon + length)
  local jobId = string.sub(entry, colon + length + 1)
  local jobKey = bullmqBaseOf(queueBase) .. jobId
  if rcall('EXISTS', jobKey .. ':lock') == 1 then return true end
  if rcall('EXISTS', jobKey) == 0 then return false end
  return rcall('LPOS', bullmqBaseOf(queueBase) .. 'active', jobId) ~= false
end

-- Counters loaded in this run, by key: a release updates what they hold.
local loadedCounters = {}

-- base, bucket: the throttle's base and the bucket's segment, for its indexes (includes/bucketIndexes).
local function loadInFlight(key, max, nowUs, base, bucket)
  local fields = rcall('HMGET', key, '#', '@', 'a', 'f')
  local counter = {
    key = key, max = max, n = tonumber(fields[1]) or 0, checkedMs = tonumber(fields[2]) or 0, nowUs = nowUs, added = {},
    base = base, bucket = bucket, markedActive = fields[3] ~= false, markedFull = tonumber(fields[4]),
  }
  loadedCounters[key] = counter
  return counter
end

-- Removes entries whose jobs have left active, at most once every CHECK_MS per bucket.
local function checkEntries(counter)
  local nowMs = math.floor(counter.nowUs / 1000)
  if nowMs < counter.checkedMs + CHECK_MS then return end
  counter.checkedMs = nowMs
  rcall('HSET', counter.key, '@', intArg(nowMs))
  local flat = rcall('HGETALL', counter.key)
  for i = 1, #flat, 2 do
    local entry = flat[i]
    -- A job's entry starts with a digit (its queue base's length); '#', '@', 'a', 'f' and holds ('~') do not.
    local first = string.byte(entry, 1)
    if first >= 48 and first <= 57 and not counter.added[entry] and not stillInFlight(entry) then
      rcall('HDEL', counter.key, entry)
      counter.n = counter.n - tonumber(flat[i + 1])
    end
  end
  counter.dirty = true
end

-- Drops the holds past their time (their workers stopped renewing: closed, crashed or cut off).
local function sweepHolds(counter)
  if counter.holdsSwept then return end
  counter.holdsSwept = true
  local holdsKey = counter.key .. ':h'
  local nowArg = intArg(math.floor(counter.nowUs / 1000))
  local lapsed = rcall('ZRANGEBYSCORE', holdsKey, '-inf', nowArg)
  if #lapsed == 0 then return end
  for _, holder in ipairs(lapsed) do
    counter.n = counter.n - (tonumber(rcall('HGET', counter.key, holder)) or 0)
    rcall('HDEL', counter.key, holder)
  end
  rcall('ZREMRANGEBYSCORE', holdsKey, '-inf', nowArg)
  counter.dirty = true
end

-- Room for more (cost units), once the holds and entries were checked when it looks as if `need` (1 unless
-- given) will not fit. counter.credit: units the asking holder holds already and has free (leaseTokens).
function inFlightRoom(counter, need)
  local credit = counter.credit or 0
  if counter.n + (need or 1) - credit > counter.max then
    sweepHolds(counter)
    checkEntries(counter)
  end
  return counter.max - counter.n + credit
end

-- Sets what a holder holds (0: nothing), lapsing at expiresMs unless set again.
local function setHold(counter, holder, units, expiresMs)
  local entry = '~' .. holder
  local old = tonumber(rcall('HGET', counter.key, entry)) or 0
  if units > 0 then
    rcall('HSET', counter.key, entry, units)
    rcall('ZADD', counter.key .. ':h', intArg(expiresMs), entry)
  elseif old > 0 then
    rcall('HDEL', counter.key, entry)
    rcall('ZREM', counter.key .. ':h', entry)
  end
  if units ~= old then
    counter.n = counter.n + units - old
    counter.dirty = true
  end
end

-- What a holder holds now: 0 once its hold lapsed (even before a sweep dropped it) or if it has none.
local function heldBy(counter, holder, nowMs)
  local entry = '~' .. holder
  local expiresMs = tonumber(rcall('ZSCORE', counter.key .. ':h', entry))
  if expiresMs == nil or expiresMs <= nowMs then return 0 end
  return tonumber(rcall('HGET', counter.key, entry)) or 0
end

-- Adds units to a holder's hold (a grant), which then lapses at expiresMs unless renewed. A lapsed hold
-- starts again from nothing: what it held may have been granted to others since.
local function addToHold(counter, holder, units, nowMs, expiresMs)
  setHold(counter, holder, heldBy(counter, holder, nowMs) + units, expiresMs)
end

-- A full bucket has room again when a job ends; the check above looks CHECK_MS after the last one.
local function inFlightRoomAtUs(counter)
  return (counter.checkedMs + CHECK_MS) * 1000
end

-- Counts a job delivered now (cost units); a stale entry of the same job is replaced.
function addInFlight(counter, queueBase, jobId, cost)
  local entry = entryOf(queueBase, jobId)
  local old = tonumber(rcall('HGET', counter.key, entry))
  if old then counter.n = counter.n - old end
  rcall('HSET', counter.key, entry, cost)
  counter.added[entry] = true
  counter.n = counter.n + cost
  counter.dirty = true
end

-- Writes the counts; a full bucket names the queue whose classes are about to wait on it.
local function saveInFlight(counter, waitingQueueBase)
  local marks = counter.base and bucketIndexes.concurrency(counter.base, counter.bucket, counter.n, counter.max,
    counter.markedActive, counter.markedFull, math.floor(counter.nowUs / 1000))
  if counter.n <= 0 then
    if counter.dirty then rcall('DEL', counter.key) end
  elseif marks and marks.f then
    rcall('HSET', counter.key, '#', intArg(counter.n), 'a', '1', 'f', intArg(marks.f))
  elseif marks then
    rcall('HSET', counter.key, '#', intArg(counter.n), 'a', '1')
    if counter.markedFull then rcall('HDEL', counter.key, 'f') end
  elseif counter.dirty then
    rcall('HSET', counter.key, '#', intArg(counter.n))
  end
  if waitingQueueBase then
    rcall('SADD', counter.key .. ':q', waitingQueueBase)
    rcall('PEXPIRE', counter.key .. ':q', WAITING_TTL_MS)
  end
end

-- Room came back in the bucket: the queues whose classes wait on it (in this slot) look again now.
local function wakeWaiting(key, bucketId, nowUs)
  for _, waitingBase in ipairs(rcall('SMEMBERS', key .. ':q')) do
    local wakeupsKey = waitingBase .. ':wakeups'
    if rcall('ZSCORE', wakeupsKey, bucketId) then
      rcall('ZADD', wakeupsKey, intArg(nowUs), bucketId)
      rcall('ZADD', bullmqBaseOf(waitingBase) .. 'marker', 0, '0')
    end
  end
end

-- Takes one ended job out of every counter it is in, and wakes the queues waiting on those buckets. Does
-- nothing for a job that is still in flight (delivered again since) or was never counted; `ended`: the
-- caller knows its last delivery ended (it was just taken from wait), whatever its lists say now.
local function releaseJobInFlight(indexKey, queueBase, jobId, nowUs, ended)
  local listed = rcall('HGET', indexKey, jobId)
  if not listed then return 0 end
  local entry = entryOf(queueBase, jobId)
  if not ended and stillInFlight(entry) then return 0 end
  rcall('HDEL', indexKey, jobId)
  local counters = cjson.decode(listed)
  local released = 0
  for i = 1, #counters, 2 do
    local key, bucketId = counters[i], counters[i + 1]
    -- With 'a' and 'f': whether its concurrency holds the bucket active, and full at which n (includes/bucketIndexes).
    local fields = rcall('HMGET', key, entry, 'a', 'f')
    local cost = tonumber(fields[1])
    if cost then
      rcall('HDEL', key, entry)
      released = released + 1
      local loaded = loadedCounters[key]
      if loaded then
        -- Loaded in this run: its count in memory is the one saved (saveInFlight), with what was added since.
        loaded.n = loaded.n - cost
        loaded.dirty = true
      else
        -- Its bucket leaves the indexes it no longer belongs in (includes/bucketIndexes); the key is
        -- <base>:b:<bucket>:c, the bucket id <throttle>=<bucket>.
        local bucket = string.sub(bucketId, string.find(bucketId, '=', 1, true) + 1)
        local base = string.sub(key, 1, #key - #bucket - 5)
        local fullAt = tonumber(fields[3])
        local left = rcall('HINCRBY', key, '#', -cost)
        if left <= 0 then
          rcall('DEL', key)
          bucketIndexes.leave(base, bucket, fields[2] ~= false, fullAt ~= nil, math.floor(nowUs / 1000))
        elseif fullAt and left < fullAt then
          rcall('HDEL', key, 'f')
          bucketIndexes.leave(base, bucket, false, true, math.floor(nowUs / 1000))
        end
      end
      wakeWaiting(key, bucketId, nowUs)
    end
  end
  return released
end
leasedHolds = { set = setHold, add = addToHold, heldBy = heldBy, wakeWaiting = wakeWaiting }

-- The concurrency kind (includes/bucketCounters): a bucket's concurrency is its counters.inFlight, when its
-- throttle has one. Fields, not locals: the delivery scripts' main chunk is near Lua's 200 locals.
-- loaded: every concurrency counter loaded in this run, saved by save.
inFlightKind = { loaded = {}, giveBack = releaseJobInFlight }

-- The concurrency's field of the limits hash, c -> n: true when the field is it.
function inFlightKind.readField(field, value, limits)
  if field ~= 'c' then return false end
  limits.concurrency = tonumber(value)
  return true
end

-- Whether the throttle has a concurrency (every field read: nothing is left to finish).
function inFlightKind.readDone(limits)
  return limits.concurrency ~= nil
end

-- Loads the bucket's concurrency into counters.inFlight (nothing when its throttle has none).
function inFlightKind.load(limits, bucket, nowUs, counters)
  if not limits.concurrency then return end
  local counter = loadInFlight(limits.base .. ':b:' .. bucket.bucket .. ':c', limits.concurrency, nowUs, limits.base, bucket.bucket)
  counter.bucketId = bucket.id
  counters.inFlight = counter
  inFlightKind.loaded[#inFlightKind.loaded + 1] = counter
end

-- The lower of room (nil: none yet) and the units the bucket's concurrency has room for now.
function inFlightKind.room(counters, room)
  local counter = counters.inFlight
  if not counter then return room end
  local left = inFlightRoom(counter)
  if room == nil or left < room then return left end
  return room
end

-- A concurrency's room returns as jobs end, which it cannot foresee: it adds nothing to an estimate (at).
function inFlightKind.waitAtUs(counters, units, at)
  return at
end

-- The later of at and when the concurrency has room for `cost` more (us); lookAgainUs for a cost over its n.
function inFlightKind.roomAtUs(counters, cost, at, lookAgainUs)
  local inFlight = counters.inFlight
  if not inFlight then return at end
  -- Its room returns when a job ends: looked at (its entries checked) by then at the latest.
  -- (credit: what a leased worker asking holds already, leaseTokens.)
  local credit = inFlight.credit or 0
  if inFlight.n + cost - credit > inFlight.max then inFlightRoom(inFlight, cost) end
  local roomAt = 0
  if cost > inFlight.max then roomAt = lookAgainUs
  elseif inFlight.n + cost - credit > inFlight.max then roomAt = inFlightRoomAtUs(inFlight) end
  -- A class may wait on it now: a release wakes this queue (save).
  if roomAt > 0 then inFlight.lacked = true end
  if roomAt > at then return roomAt end
  return at
end

-- Tokens granted count nothing here: a concurrency counts the job delivered, by name (addInFlight, exactRoom).
function inFlightKind.add()
end

-- Writes every concurrency counter loaded in this run; a full one, or one a class lacked room in, names
-- waitingQueueBase (the queue whose classes may wait on it now: woken when a job in flight ends).
function inFlightKind.save(waitingQueueBase)
  for _, counter in ipairs(inFlightKind.loaded) do saveInFlight(counter, (counter.lacked or counter.n >= counter.max) and waitingQueueBase) end
end
end -- of the block that keeps the helpers local
