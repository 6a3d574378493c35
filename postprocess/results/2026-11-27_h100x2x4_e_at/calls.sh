S="--config config/humanoid_sac_many_envs.yaml --set sac.learning_starts=2000"
C="--config config/cartpole_ppo.yaml --set train.total_env_steps=2000000000"
export RUNS="sac_dp_1g|1|40|0|0-15|$S --set env.num_envs=80;sac_eat_1g|6|40|0|0-15|$S --set mapping.template=e-at --set env.num_envs=16;sac_dp_2g|2|40|0,1|all|$S --set env.num_envs=80;sac_eat_2g|12|40|0,1|all|$S --set mapping.template=e-at --set env.num_envs=16;cp_dp_1g|1|30|0|0-15|$C --set env.num_envs=12288;cp_eat_1g|4|30|0|0-15|$C --set mapping.template=e-at --set env.num_envs=4096;cp_dp_2g|2|30|0,1|all|$C --set env.num_envs=12288;cp_eat_2g|8|30|0,1|all|$C --set mapping.template=e-at --set env.num_envs=4096"
LEARN=1 TUNE=1 bash .gpu/i37t.sh
H="--config config/humanoid_ppo.yaml --set env.async_halves=true --set train.total_env_steps=2000000000"
export RUNS="hppo_dp_1g|1|45|0|0-15|$H --set env.num_envs=96;hppo_eat_1g|7|45|0|0-15|$H --set mapping.template=e-at --set env.num_envs=16;hppo_dp_2g|2|45|0,1|all|$H --set env.num_envs=96;hppo_eat_2g|14|45|0,1|all|$H --set mapping.template=e-at --set env.num_envs=16"
bash .gpu/i37t.sh
HS="--config config/hopper_sac.yaml --set env.num_envs=8 --set sac.num_steps=200 --set sac.learning_starts=256 --set train.total_env_steps=2000000000"
S="--config config/humanoid_sac_many_envs.yaml --set sac.learning_starts=2000 --set env.num_envs=80"
P="--set reduce.inter_gpu=p2p"
export RUNS="hsac_1g|1|28|0|0-15|$HS;hsac_2g_nccl|2|28|0,1|all|$HS;hsac_2g_p2p|2|28|0,1|all|$HS $P;sac_1g|1|35|0|0-15|$S;sac_2g_nccl|2|35|0,1|all|$S;sac_2g_p2p|2|35|0,1|all|$S $P"
bash .gpu/i37p.sh
S="--config config/humanoid_sac_many_envs.yaml --set sac.learning_starts=2000"
C="--config config/cartpole_ppo.yaml --set train.total_env_steps=2000000000"
export RUNS="cp_dp_1g|1|25|0|0-15|$C --set env.num_envs=12288;cp_eat_1g|4|25|0|0-15|$C --set mapping.template=e-at --set env.num_envs=4096;cp_dp_4g|4|25|0,1,2,3|all|$C --set env.num_envs=12288;cp_eat_4g|16|30|0,1,2,3|all|$C --set mapping.template=e-at --set env.num_envs=4096;sac_dp_1g|1|35|0|0-15|$S --set env.num_envs=80;sac_eat_1g|6|35|0|0-15|$S --set mapping.template=e-at --set env.num_envs=16;sac_dp_4g|4|35|0,1,2,3|all|$S --set env.num_envs=80;sac_eat_4g|24|40|0,1,2,3|all|$S --set mapping.template=e-at --set env.num_envs=16"
bash .gpu/i37t.sh
