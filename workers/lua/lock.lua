-- Grant or renew the locks of queues for one consumer of a group: each key on its own,
-- exactly as if the script ran once per key (a cluster calls it with one key, or with
-- keys of one slot; a standalone Redis takes many in one call: docs/reading.md).
-- KEYS[i]: a lock hash (ls:{topic:queue}:lock:<group>), fields owner, token,
--          expires_at, granted_at, renewed_at (ms, Redis clock)
-- ARGV[1]: consumer id asking
-- ARGV[2]: lock time-to-live in ms
-- ARGV[3]: '1' to renew only (optional): refuse instead of granting when the caller does
--          not hold a live lock, so a consumer finishing a queue it is handing over keeps
--          its lock alive but can never re-take one it has already released
-- Returns: {token, granted, token, granted, ...}, one pair per key in KEYS order, where
--          token 0 means refused (held by another live owner), granted 1 means a new
--          grant (new fencing token: re-read the offset), granted 0 means a renewal of
--          the caller's current grant.
-- An expired lock is re-granted with a new token even to its last owner: whoever held it
-- may have lost it meanwhile, so the caller must start again from the stored offset.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])

local function lock(key)
  local held = redis.call('HMGET', key, 'owner', 'expires_at', 'token')
  local owner = held[1]
  local expires = tonumber(held[2] or '0')
  if owner == ARGV[1] and expires > now then
    redis.call('HSET', key, 'expires_at', now + ttl, 'renewed_at', now)
    return tonumber(held[3]), 0
  end
  if ARGV[3] == '1' then
    return 0, 0
  end
  if owner and owner ~= '' and expires > now then
    return 0, 0
  end
  local token = redis.call('HINCRBY', key, 'token', 1)
  redis.call('HSET', key, 'owner', ARGV[1], 'expires_at', now + ttl,
    'granted_at', now, 'renewed_at', now)
  return token, 1
end

local out = {}
for _, key in ipairs(KEYS) do
  local token, granted = lock(key)
  out[#out + 1] = token
  out[#out + 1] = granted
end
return out
