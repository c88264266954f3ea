-- Replay or discard one dead letter (operator action). Idempotent: a dead letter that is
-- no longer in the stream changes nothing.
-- Replay puts the message back at its key's place: into the key's parked set at its
-- original offset, ahead of everything parked behind it; the owning consumer then drains
-- the set in offset order before the key moves on. Discard drops it; a held key is then
-- released and its parked messages run in order.
-- A released key is only marked 'releasing', even with nothing parked: its consumer may be
-- parking messages of the key at this moment (the dead letter and the parking of the
-- key's rest are two steps), and freeing the key here would strand them in a parked set
-- nobody drains. The consumer frees it (unpark.lua) once the parked set is empty.
-- KEYS[1]: the dead-letter stream (ls:{topic:queue}:dlq:<group>)
-- KEYS[2]: the parked-keys hash   (ls:{topic:queue}:parked:<group>)
-- KEYS[3]: the key's parked set   (ls:{topic:queue}:parked:<group>:<key>)
-- ARGV[1]: dead-letter entry id
-- ARGV[2]: 'replay' or 'discard'
-- ARGV[3]: sharding key of the dead letter
-- ARGV[4]: its original offset
-- ARGV[5]: the serialised message (replay only)
-- Returns: 1 when done, 0 when the dead letter was not found (already handled).
if #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1]) == 0 then
  return 0
end
redis.call('XDEL', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[2] == 'replay' then
  redis.call('ZADD', KEYS[3], tonumber(ARGV[4]), ARGV[5])
end
local raw = redis.call('HGET', KEYS[2], ARGV[3])
local state = {offset = tonumber(ARGV[4])}
if raw then state = cjson.decode(raw) end
if raw or ARGV[2] == 'replay' then
  state.state = 'releasing'
  state.since = now
  redis.call('HSET', KEYS[2], ARGV[3], cjson.encode(state))
end
return 1
