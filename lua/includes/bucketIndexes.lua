--[[
  A throttle's bucket indexes, under its base, kept by its counters of every kind and read by
  ThrottleAdmin.throttleStats with one ZCOUNT (now, +inf) each, whatever the number of buckets:
    :active  ZSET bucket -> until when (ms) it counts something
    :full    ZSET bucket -> until when (ms) it has no room for one more
  What each kind says, and when it writes it:
    window (windowCounter)     active until its last counted token is released; full, once just filled,
                               until its earliest slot's start at the soonest
    rate (rateCounter)         active while its stored time is in the future (until its key expires); full
                               until room for one more returns
    a blocked class (exactRoom noteFull) full until the bucket's room returns, all limits taken together
    concurrency (inFlightCounter) active while it counts jobs or held units; full while it counts >= n: until
                               further notice, for a job may run for hours
  Invariant: a bucket's score in an index is the latest time any time kind (window, rate, blocked class) said,
  plus BAND (10^15 ms, some thirty thousand years: never reached, so ZCOUNT (now, +inf) counts it) while
  its concurrency holds it there (:active while it counts > 0, :full while it counts >= n). So each bucket
  counts once, whichever kinds hold it, and a concurrency can let go of it without knowing the other kinds:
    - a time kind writes BAND + its time when its bucket's concurrency holds the bucket, else its time,
      with ZADD GT (the latest until wins, inside the band as outside). It knows from this script's
      concurrency counter of the bucket (bucketCounters loads one whenever the throttle has a concurrency),
      which is saved, entering or leaving the band, before any time kind writes (saveBucketCounters);
    - a concurrency enters the band (ZINCRBY BAND) when its count rises from 0 (active) or to n (full), and
      leaves it (ZINCRBY -BAND, then ZREM when what is left is past) when its count drops to 0 or below n: on a delivery, a grant, a hold changed or lapsed, a release, or the check of
      a full bucket's ended jobs. Its counter HASH marks what it entered ('a'; 'f' -> the n it was full at),
      so a counter found counting without a mark (written before the indexes knew concurrency) enters then;
    - a blocked class's note is a plain ZADD (it may lower a stale time), left out while the concurrency
      holds the bucket full (the band's time part is the time kinds' to keep);
    - pruning (throttleIndexes) drops past scores only (band scores are never past), and gives the indexes of a
      throttle with a concurrency no TTL: its buckets' jobs may run longer than any TTL. (A concurrency-only
      throttle's indexes empty themselves as its jobs end; a mixed one's keep past scores until it next delivers.)
  Scores stay exact: BAND + a time in ms is below 2^53. The including script defines rcall.
]]
--- @include "intArg"
-- One table, not one local per function: the delivery scripts' main chunk is near Lua's 200 locals.
local bucketIndexes = { BAND = 1000000000000000 }
do
local BAND = bucketIndexes.BAND
-- base -> bucket -> 1: held in :active by its concurrency; 3: in :active and :full. Absent: in neither.
local bands = {}
-- index (':active', ':full') -> base -> { score, bucket, ... }, written in one ZADD GT per index and throttle.
local pending = { [':active'] = {}, [':full'] = {} }
-- base -> { bucket, roomAtMs, ... }: blocked classes' notes, plain ZADDs to :full.
local blocked = {}

-- A time kind's until (ms) for a bucket's index, kept by the next flush.
function bucketIndexes.note(base, index, bucket, untilMs)
  local held = bands[base]
  held = held and held[bucket]
  if held and (held == 3 or index == ':active') then untilMs = untilMs + BAND end
  local list = pending[index][base]
  if list == nil then
    list = {}
    pending[index][base] = list
  end
  list[#list + 1] = intArg(untilMs)
  list[#list + 1] = bucket
end

-- A class found no room in the bucket until roomAtMs (all its limits taken together).
function bucketIndexes.noteBlocked(base, bucket, roomAtMs)
  local list = blocked[base]
  if list == nil then
    list = {}
    blocked[base] = list
  end
  list[#list + 1] = bucket
  list[#list + 1] = roomAtMs
end

-- Called only where the counter's marks say the bucket is out of the band (in, for leave): one ZINCRBY each
-- way. Should a mark and the index disagree (a key lost apart from the other), the result shows it and is undone.
local function enter(key, bucket)
  if tonumber(rcall('ZINCRBY', key, intArg(BAND), bucket)) >= 2 * BAND then rcall('ZINCRBY', key, intArg(-BAND), bucket) end
end

local function leave(key, bucket, nowMs)
  local score = tonumber(rcall('ZINCRBY', key, intArg(-BAND), bucket))
  if score < 0 then score = tonumber(rcall('ZINCRBY', key, intArg(BAND), bucket)) end
  if score <= nowMs then rcall('ZREM', key, bucket) end
end

-- A concurrency counter's bucket after this script: counted (units in flight), max (n), marks ('a' and 'f' as
-- loaded: 'f' the n it was full at, or nil). Enters or leaves the bands; returns the marks to store ('f': the n now,
-- or false), or nil when they stay as they are.
function bucketIndexes.concurrency(base, bucket, counted, max, markedActive, markedFull, nowMs)
  local active, full = counted > 0, counted > 0 and counted >= max
  local held = bands[base]
  if held == nil then
    held = {}
    bands[base] = held
  end
  held[bucket] = (full and 3) or (active and 1) or nil
  if active == markedActive and full == (markedFull ~= nil) and (not full or markedFull == max) then return nil end
  if active and not markedActive then enter(base .. ':active', bucket) end
  if full and markedFull == nil then enter(base .. ':full', bucket) end
  if not active and markedActive then leave(base .. ':active', bucket, nowMs) end
  if not full and markedFull ~= nil then leave(base .. ':full', bucket, nowMs) end
  return { a = active, f = full and max }
end

-- A concurrency counter emptied or lowered outside a delivery (a release): leaves what it no longer holds.
function bucketIndexes.leave(base, bucket, leaveActive, leaveFull, nowMs)
  if leaveActive then leave(base .. ':active', bucket, nowMs) end
  if leaveFull then leave(base .. ':full', bucket, nowMs) end
end

-- Writes what was noted in this script: blocked classes' notes first (plain), then the time kinds' (GT).
function bucketIndexes.flush()
  for base, list in pairs(blocked) do
    local held = bands[base]
    local fullKey = base .. ':full'
    for i = 1, #list, 2 do
      if not (held and held[list[i]] == 3) then rcall('ZADD', fullKey, intArg(list[i + 1]), list[i]) end
    end
  end
  blocked = {}
  for index, byBase in pairs(pending) do
    for base, list in pairs(byBase) do rcall('ZADD', base .. index, 'GT', unpack(list)) end
    pending[index] = {}
  end
end
end -- of the block that keeps the helpers local
