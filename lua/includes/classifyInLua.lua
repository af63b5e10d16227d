--[[
  Works out a job's class inside the delivery script, exactly as src/queueState/jobClassifier.ts does, for
  queues whose throttles key only on job.data paths and the job name and whose workers compute no
  attributes: such jobs then go from wait to active in one script, with no classification round trip.

  The spec is the queue state's `lua` field (written by publishQueueConfig, built by
  src/queueState/luaClassSpec.ts): the queue's throttles in the order their bucket ids sort, as
    [ { "n": encoded name, "k": [ ["name"] | ["data", segment, ...], ... ] (absent: unkeyed),
        "u": true when a job missing the key is not subject to the throttle,
        "c": ["data", segment, ...] where a job's cost is read (absent: 1), "cd": the cost's default (absent:
        none), "cm": the most a job may cost (src/declarations/Cost.ts costCapacity; absent: no bound) } ],
  and last, when the queue has a fairness key, { "f": its key parts as "k"'s, "w": { group: weight } }.
  Paths that JavaScript would resolve differently from a plain table lookup (array indexes, `length`,
  prototype names) never reach a spec.

  classifyInLua returns the job's buckets ({ id, name, bucket, cost } each), or nil when the job needs the
  TypeScript classifier: data that is not JSON, a key value that is not ASCII, not an integer of at most
  2^53, or an object; a cost that is missing (with no default), not a positive whole number, or above cm
  (the worker fails such a job, src/queueState/jobCost.ts, and logs why). (There it is placed as before, with the
  warnings it logs.) classMember names the
  class of those buckets; it is built only when needed, as a job that goes at once needs no class name.
  Needs cjson (Redis's Lua has it).
]]
-- What other scripts use. The rest is local to the block below: a script's main chunk holds at most
-- 200 locals, and the delivery scripts, with bullmq's includes, come close to that.
local parseClassSpec, classifyInLua, classMember
do
function parseClassSpec(text)
  if not text or text == '' then return nil end
  local spec = cjson.decode(text)
  spec.needsData, spec.needsName = false, false
  -- The queue's fairness key, when it has one: an entry of its own after the throttles ({ "f": key parts, "w":
  -- declared weights by group }), read here like a key (includes/fairness).
  if #spec > 0 and spec[#spec].f then
    spec.fair = table.remove(spec)
    for _, part in ipairs(spec.fair.f) do
      if part[1] == 'data' then spec.needsData = true else spec.needsName = true end
    end
  end
  for _, throttle in ipairs(spec) do
    for _, part in ipairs(throttle.k or {}) do
      if part[1] == 'data' then spec.needsData = true else spec.needsName = true end
    end
    if throttle.c then spec.needsData = true end
    -- An unkeyed throttle's one bucket, shared by every job (the delivery script only reads buckets).
    if throttle.k == nil then throttle.only = { id = throttle.n .. '=-', name = throttle.n, bucket = '-' } end
    -- A key of one data field (the usual case) is read without walking a path.
    local k = throttle.k
    if k and #k == 1 and k[1][1] == 'data' and #k[1] == 2 then throttle.dataField = k[1][2] end
  end
  return spec
end

local DEFER = {}

-- encodeURIComponent of an ASCII string (nil for any other), as src/keys/keyEncoding.ts encodeSegment.
local function encodeAsciiSegment(text)
  -- Letters and digits only (most ids): nothing to encode, one cheap scan.
  if not string.find(text, '[^A-Za-z0-9]') then return text end
  if string.find(text, '[\128-\255]') then return nil end
  return (string.gsub(text, "[^A-Za-z0-9%-_%.!~%*'%(%)]", function(c) return string.format('%%%02X', string.byte(c)) end))
end

-- One key value's encoding (src/keys/keyEncoding.ts encodeValue), nil when missing, DEFER when unsure.
local function keyValueSegment(value)
  local kind = type(value)
  if kind == 'string' then
    local encoded = encodeAsciiSegment(value)
    if encoded == nil then return DEFER end
    return 's' .. encoded
  elseif kind == 'boolean' then
    return value and 't' or 'f'
  elseif kind == 'number' then
    -- String(n) in JavaScript spells these as integers; -0 as 0.
    if value ~= math.floor(value) or value >= 9007199254740992 or value <= -9007199254740992 then return DEFER end
    return 'n' .. string.format('%d', value)
  elseif value == nil or value == cjson.null then
    return nil
  end
  return DEFER
end

-- The value at one key part of a job, or DEFER.
local function keyPartSegment(part, name, data)
  local value
  if part[1] == 'name' then
    value = name or nil
  else
    value = data
    for s = 2, #part do
      if type(value) ~= 'table' then return nil end
      value = value[part[s]]
    end
  end
  return keyValueSegment(value)
end

-- A job's cost in one throttle (its "c" path, as src/queueState/jobCost.ts reads it), or nil when it cannot be
-- counted: the worker's classifier then places the job, and the worker fails it.
local function jobCost(throttle, data)
  local value = data
  local path = throttle.c
  for s = 2, #path do
    if type(value) ~= 'table' then value = nil break end
    value = value[path[s]]
  end
  local cost
  if type(value) == 'number' and value == math.floor(value) and value >= 1 and value < 9007199254740992 then
    cost = value
  elseif throttle.cd then
    cost = throttle.cd
  else
    return nil
  end
  if throttle.cm and cost > throttle.cm then return nil end
  return cost
end

-- The segment of a key of several parts (their values' segments joined, as encodeBucket does), nil when a value is
-- missing, or DEFER.
local function keySegment(parts, name, data)
  local segments, missing = {}, false
  for i, part in ipairs(parts) do
    local segment = keyPartSegment(part, name, data)
    if segment == DEFER then return DEFER end
    if segment == nil then missing = true else segments[i] = segment end
  end
  if missing then return nil end
  return table.concat(segments, ',')
end

-- One job's buckets, and its fairness group when the queue has a fairness key; nil when the worker's classifier
-- must place it.
function classifyInLua(spec, name, dataText)
  local data
  if spec.needsData then
    -- JSON.parse refuses raw control characters, hex, Infinity and NaN, which cjson would take. (%c
    -- also matches DEL, which JSON.parse takes: such data is left to the worker, which is only slower.)
    if not dataText or string.find(dataText, '%c') then return nil end
    local lenient = cjson.decode_invalid_numbers()
    cjson.decode_invalid_numbers(false)
    local ok, decoded = pcall(cjson.decode, dataText)
    cjson.decode_invalid_numbers(lenient)
    if not ok then return nil end
    data = decoded
  end
  local buckets = {}
  for t = 1, #spec do
    local throttle = spec[t]
    local keyParts, bucket = throttle.k, nil
    local field = throttle.dataField
    if keyParts == nil then
      bucket = '-'
    elseif field then
      local value = nil
      if type(data) == 'table' then value = data[field] end
      -- Letters and digits (most ids) need no encoding.
      if type(value) == 'string' and not string.find(value, '[^A-Za-z0-9]') then
        bucket = 's' .. value
      else
        bucket = keyValueSegment(value)
        if bucket == DEFER then return nil end
      end
    elseif #keyParts == 1 then
      bucket = keyPartSegment(keyParts[1], name, data)
      if bucket == DEFER then return nil end
    else
      bucket = keySegment(keyParts, name, data)
      if bucket == DEFER then return nil end
    end
    if keyParts ~= nil and bucket == nil and not throttle.u then bucket = '~' end
    if bucket then
      local cost = 1
      if throttle.c then
        cost = jobCost(throttle, data)
        if cost == nil then return nil end
      end
      if keyParts == nil and cost == 1 then
        buckets[#buckets + 1] = throttle.only
      else
        buckets[#buckets + 1] = { id = throttle.n .. '=' .. bucket, name = throttle.n, bucket = bucket, cost = cost }
      end
    end
  end
  if spec.fair then
    -- A job missing the fairness key is of the group '~'.
    local group = keySegment(spec.fair.f, name, data)
    if group == DEFER then return nil end
    return buckets, group or '~'
  end
  return buckets
end

-- A bucket as its class names it: its id, and its cost when other than 1 (includes/schedulerKeys parseClass).
local function memberPart(bucket)
  if bucket.cost == nil or bucket.cost == 1 then return bucket.id end
  return bucket.id .. '$' .. string.format('%d', bucket.cost)
end

-- The class member of a job of config generation gen that draws from these buckets (in spec order).
function classMember(gen, buckets)
  if #buckets == 0 then return gen .. '/*' end
  if #buckets == 1 then return gen .. '/' .. memberPart(buckets[1]) end
  local ids = {}
  for i = 1, #buckets do ids[i] = memberPart(buckets[i]) end
  return gen .. '/' .. table.concat(ids, '|')
end
end -- of the block that keeps the helpers local
