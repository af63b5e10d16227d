--[[
  An integer as a command argument. redis.call spells a Lua number with "%.17g", which costs about ten
  times what "%d" does, and even "%d" costs about 2k instructions a call; the counters, scores and times
  passed on every delivery are integers, and most of them repeat within a run (every token granted in one
  run falls in the same slot), so each is spelled once per run. A fraction (a held job's order under fair shares,
  includes/fairness) is spelled exactly, with "%.17g".
]]
local intArgSpelled = {}
local function intArg(x)
  local spelled = intArgSpelled[x]
  if spelled == nil then
    if x % 1 == 0 then spelled = string.format('%d', x) else spelled = string.format('%.17g', x) end
    intArgSpelled[x] = spelled
  end
  return spelled
end
