-- Fenced move of one message to its group's dead-letter stream, with the offset commit
-- that follows it, in one step: the message is either dead-lettered and committed past,
-- or neither.
-- Prelude: fence (workers/lua/_fence.lua: `now`, `fence_check`)
-- KEYS[1]: the lock hash          (ls:{topic:queue}:lock:<group>)
-- KEYS[2]: the offset hash        (ls:{topic:queue}:offset:<group>)
-- KEYS[3]: the dead-letter stream (ls:{topic:queue}:dlq:<group>)
-- KEYS[4]: the parked-keys hash   (ls:{topic:queue}:parked:<group>), key -> JSON state
-- ARGV[1]: consumer id
-- ARGV[2]: fencing token ('' = unfenced, broadcasting model)
-- ARGV[3]: new committed offset
-- ARGV[4]: completed offsets above it ('' when none)
-- ARGV[5]: sharding key to park (after_dlq = hold), '' to let the key continue
-- ARGV[6..]: field/value pairs of the dead-letter entry
-- Returns: {1, token, dlq_entry_id} on success, {0, token} when fenced out,
--          {-1, token} when the lock expired.
local token = 0
if ARGV[2] ~= '' then
  local refused
  token, refused = fence_check(KEYS[1], ARGV[1], ARGV[2])
  if refused then return refused end
end
local fields = {}
for i = 6, #ARGV do fields[#fields + 1] = ARGV[i] end
fields[#fields + 1] = 'dead_at'
fields[#fields + 1] = now
local id = redis.call('XADD', KEYS[3], '*', unpack(fields))
if ARGV[5] ~= '' then
  -- Hold: the key's later messages are parked until this dead letter is replayed or
  -- discarded. The offset recorded is the dead letter's, for the dashboard.
  local offset = nil
  for i = 6, #ARGV - 1, 2 do
    if ARGV[i] == 'offset' then offset = tonumber(ARGV[i + 1]) end
  end
  redis.call('HSET', KEYS[4], ARGV[5],
    cjson.encode({state = 'held', dlq_id = id, offset = offset, since = now}))
end
redis.call('HSET', KEYS[2], 'committed', ARGV[3], 'completed', ARGV[4],
  'token', token, 'updated_at', now)
return {1, token, id}
