--[[
  Keys and names of the delivery scheduler, composed exactly as src/keys/ThrottleKeys.ts composes them.

  A class is the set of buckets a job draws from, named "<gen>/<buckets>": <gen> is the queue's config
  generation, <buckets> is "*" (no bucket) or "<encoded throttle>=<bucket>" joined by "|", sorted, each
  followed by "$<cost>" where the job costs other than 1 (a throttle's cost(); encoded names and buckets
  hold no '$'; "$0": a cost that cannot be counted, the worker fails the job when it is delivered). A bucket id is one "<encoded throttle>=<bucket>", without the cost.
]]
-- A name as src/keys/keyEncoding.ts encodeSegment spells it (encodeURIComponent: UTF-8 bytes as %XX).
local function encodeSegment(text)
  return (string.gsub(text, "[^%w%-_%.!~%*'%(%)]", function(c) return string.format('%%%02X', string.byte(c)) end))
end

local function classJobsKey(queueBase, member)
  return queueBase .. ':c:' .. member
end

local function waitersKey(queueBase, bucketId)
  return queueBase .. ':w:' .. bucketId
end

-- Every key of one throttle starts with this (its counters, limits and bucket indexes); throttlePrefix
-- ends with the namespace's hash tag, so every throttle of a namespace is in one slot.
local function throttleBase(throttlePrefix, encodedName)
  return throttlePrefix .. encodedName
end

-- What one queue keeps of one throttle's statistics (in the queue's slot): :waiting, :stats, :recent.
local function queueStatsBase(queueBase, encodedName)
  return queueBase .. ':t:' .. encodedName
end

local function limitsKey(throttlePrefix, encodedName)
  return throttleBase(throttlePrefix, encodedName) .. ':limits'
end

-- A bucket's counter key for one limit is head .. bucket .. tail; windowMs as the limits key spells it (a
-- string, so that no number is formatted per delivery).
local function counterKeyParts(base, windowMs)
  return base .. ':b:', ':' .. windowMs
end

-- One bucket of a class as the class spells it, "<a>=<x>" or "<a>=<x>$<c>" -> { id = "a=x", name = "a", bucket = "x", cost = c or 1 }
local function parseBucketPart(part)
  local id, cost = part, 1
  local dollar = string.find(part, '$', 1, true)
  if dollar then id, cost = string.sub(part, 1, dollar - 1), tonumber(string.sub(part, dollar + 1)) end
  local eq = string.find(id, '=', 1, true)
  return { id = id, name = string.sub(id, 1, eq - 1), bucket = string.sub(id, eq + 1), cost = cost }
end

-- "<gen>/<a>=<x>|<b>=<y>$<c>" -> gen, { { id = "a=x", name = "a", bucket = "x", cost = 1 }, { id = "b=y", ..., cost = c } }
local function parseClass(member)
  local slash = string.find(member, '/', 1, true)
  local gen = string.sub(member, 1, slash - 1)
  local rest = string.sub(member, slash + 1)
  local buckets = {}
  if rest ~= '*' then
    for part in string.gmatch(rest, '[^|]+') do buckets[#buckets + 1] = parseBucketPart(part) end
  end
  return gen, buckets
end

local function parseBucketId(id)
  local eq = string.find(id, '=', 1, true)
  return { id = id, name = string.sub(id, 1, eq - 1), bucket = string.sub(id, eq + 1) }
end
