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
  A group is its key values' segment, as a bucket's (src/keys/keyEncoding.ts encodeBucket); '~' when missing.
  Tags are fractions (cost / weight); a ZSET score keeps them exactly below priority 2^20.
  The including script defines rcall. Defines fairness: start, tag, delivered, save.
]]
local fairness = {}

-- The run's fairness state from the state hash's fields fair, fv and fifo, with the class spec (includes/
-- classifyInLua: its declared weights; nil when the workers classify, and name each job's weight themselves);
-- false when the queue has no fairness key.
function fairness.start(flag, spec, storedV, fifo)
  if flag ~= '1' then return false end
  return { spec = (spec and spec.fair) or { w = {} }, v = tonumber(storedV) or tonumber(fifo) or 0, vRead = tonumber(storedV), finish = {}, weights = {}, dirty = {} }
end

-- The start tag of a job of `group` costing `cost`, and the group's finish tag moved past it.
function fairness.tag(input, fair, group, cost)
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

-- A job of this order was delivered: V moves to its start tag when later (a fifo order's sequence part).
function fairness.delivered(fair, order, span)
  if not fair or not order then return end
  local tag = (order % 0x100000000) - span
  if tag > fair.v then fair.v = tag end
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
end
