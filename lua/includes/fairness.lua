--[[
  Fair shares between a queue's groups (ThrottledWorker's `fairness` option), as start-time fair queuing: each
  held job's place in line (its order's sequence part, includes/jobOrder) is a virtual time, its start tag
    S = max(V, F_g)        F_g := S + cost / weight_g
  where V, the queue's virtual time, is the greatest start tag delivered so far, and F_g the finish tag of the
  group's latest job. Held jobs go by order, least first (classes, ready jobs and fresh ones alike: includes/
  takeJobsBody), so among jobs that fit the groups take turns in proportion to their weights, in cost units,
  whatever order they came in; a group that had nothing waiting starts at V and brings no credit from its idle
  time; a group with nothing that fits gives its turn away (the others' jobs go past it), so no room is left idle.
  Keys, in the queue's slot:
    <queueBase>:state          field fair: '1' while the queue's workers declare a fairness key (lua/publishQueueConfig-n.lua);
                               field fv: V (absent: the fifo counter, where the queue's orders were up to then)
    <queueBase>:fair-finish    HASH group -> F_g
    <queueBase>:fair-weights   HASH group -> weight set at run time (ThrottleAdmin.setFairnessWeight), before
                               the declared ones (the class spec's "w", includes/classifyInLua); 1 otherwise
    <queueBase>:fair-delivered ZSET group -> cost units delivered (since the key exists), for ThrottleAdmin.queueStats;
                               its sum is the state's field fd
  and each held job's group in its hash's field thf (written as it is given its turn; a job deleted takes it along),
  which a delivery reads back from the fields it hands the worker.
  A group is its key values' segment, as a bucket's (src/keys/keyEncoding.ts encodeBucket); '~' when missing.
  Tags are fractions (cost / weight); a ZSET score keeps them exactly below priority 2^20.
  The including script defines rcall. Defines fairness: start, tag, delivered, costOf, save.
]]
local fairness = {}

-- The run's fairness state from the state hash's fields fair, fv and fifo, with the class spec (includes/
-- classifyInLua: its declared weights; nil when the workers classify, and name each job's weight themselves);
-- false when the queue has no fairness key.
function fairness.start(flag, spec, storedV, fifo)
  if flag ~= '1' then return false end
  return { spec = (spec and spec.fair) or { w = {} }, v = tonumber(storedV) or tonumber(fifo) or 0, vRead = tonumber(storedV), finish = {}, weights = {}, dirty = {}, delivered = {}, deliveredSum = 0 }
end

-- The start tag of job jobId of `group` costing `cost` (its group noted in its hash), and the group's finish tag
-- moved past it.
function fairness.tag(input, fair, group, cost, jobId)
  rcall('HSET', input.jobPrefix .. jobId, 'thf', group)
  local finish = fair.finish[group]
  if finish == nil then finish = tonumber(rcall('HGET', input.queueBase .. ':fair-finish', group)) or 0 end
  local weight = fair.weights[group]
  if weight == nil then
    weight = tonumber(rcall('HGET', input.queueBase .. ':fair-weights', group)) or tonumber((fair.spec.w or {})[group]) or 1
    if weight <= 0 then weight = 1 end
    fair.weights[group] = weight
  end
  local start = math.max(fair.v, finish)
  fair.finish[group] = start + cost / weight
  fair.dirty[group] = true
  return start
end

-- A job of this order (nil: it went at once, untagged) was delivered, its hash's fields as handed to the worker
-- (prepared) or its group when known: V moves to its start tag when later (a fifo order's sequence part), and the
-- group's delivered units count it.
function fairness.delivered(fair, order, span, cost, group, fields)
  if not fair then return end
  if order then
    local tag = (order % 0x100000000) - span
    if tag > fair.v then fair.v = tag end
  end
  if not group and fields then
    for i = 1, #fields - 1, 2 do
      if fields[i] == 'thf' then group = fields[i + 1] break end
    end
  end
  if group then
    fair.delivered[group] = (fair.delivered[group] or 0) + cost
    fair.deliveredSum = fair.deliveredSum + cost
  end
end

-- What a job of these buckets counts for its group: its dearest bucket's cost.
function fairness.costOf(buckets)
  local cost = 1
  for i = 1, #buckets do
    if (buckets[i].cost or 1) > cost then cost = buckets[i].cost end
  end
  return cost
end

function fairness.save(input, fair)
  if not fair then return end
  local flat = {}
  for group in pairs(fair.dirty) do
    flat[#flat + 1] = group
    flat[#flat + 1] = string.format('%.17g', fair.finish[group])
  end
  if #flat > 0 then rcall('HSET', input.queueBase .. ':fair-finish', unpack(flat)) end
  if fair.v ~= fair.vRead then rcall('HSET', input.stateKey, 'fv', string.format('%.17g', fair.v)) end
  for group, units in pairs(fair.delivered) do rcall('ZINCRBY', input.queueBase .. ':fair-delivered', units, group) end
  if fair.deliveredSum > 0 then rcall('HINCRBY', input.stateKey, 'fd', fair.deliveredSum) end
end
