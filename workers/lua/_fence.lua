-- Fence prelude: workers/scripts.py puts this in front of every script whose header says
-- "-- Prelude: fence" (see docs/fencing.md). It is not a script on its own.
-- Defines:
--   now: the Redis clock in ms (one TIME call per script run)
--   fence_check(lock_key, owner, token_arg) -> token, refusal
--     token: the lock's current fencing token (0 when never granted)
--     refusal: nil when `owner` holds the lock with `token_arg` and it has not expired;
--              else the reply the script must return: {0, token} when the owner or token
--              is stale (fenced out), {-1, token} when the lock expired on the broker side.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function fence_check(lock_key, owner, token_arg)
  local holder = redis.call('HGET', lock_key, 'owner')
  local token = tonumber(redis.call('HGET', lock_key, 'token') or '0')
  if holder ~= owner or token ~= tonumber(token_arg) then
    return token, {0, token}
  end
  if tonumber(redis.call('HGET', lock_key, 'expires_at') or '0') <= now then
    return token, {-1, token}
  end
  return token, nil
end
