--[[
  The slots a delivery call serves (includes/takeJobsBody). The call brings K lock tokens, one a slot asking
  for a job (ARGV[13..12+K], lua/takeNextJobs-19.lua), and the n-th job it delivers is locked with the n-th
  token it serves. A slot whose completion was refused (completeJobs adds its token to refused-tokens) gets
  no job, as bullmq fetches a next job only after a completion that succeeded; the reply names it instead.
  Refusals are rare: one EXISTS spares the call a SREM a token.
  Needs rcall. Defines slotTokens(input) (input: includes/takeJobsInput's table) -> the tokens to serve, in
  order, and the positions (1..K) of the refused ones.
]]
local function slotTokens(input)
  -- Slots whose completion was refused are left out; the others are served in order.
  local tokens, refused = {}, {}
  if rcall('EXISTS', input.refusedKey) == 1 then
    for i = 1, input.K do
      local token = ARGV[12 + i]
      if rcall('SREM', input.refusedKey, token) == 1 then refused[#refused + 1] = i else tokens[#tokens + 1] = token end
    end
  else
    for i = 1, input.K do tokens[i] = ARGV[12 + i] end
  end
  return tokens, refused
end
