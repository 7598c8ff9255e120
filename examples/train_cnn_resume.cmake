# example.train_cnn.resume: train_cnn writes a checkpoint after its first
# epoch, and a second run resumes from it instead of starting over: it says
# where it resumed, trains only the second epoch, and tests after it.
# Invoked with -DTRAIN_CNN=<binary> -DSCRATCH=<dir>, and optionally
# -DMODEL=<the model's flags, ;-separated> -DIDENTITY=<the start of its
# identity in a checkpoint> for another model than the default ResNet.
if(NOT DEFINED IDENTITY)
  set(IDENTITY "resnet-18 width 0.25")
endif()
file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}")
set(common ${MODEL} --train-limit 256 --test-limit 128 --batch 32 --checkpoint "${SCRATCH}/run.ckpt")
execute_process(COMMAND "${TRAIN_CNN}" --epochs 1 ${common} RESULT_VARIABLE rc OUTPUT_VARIABLE first ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the first run failed (${rc}):\n${first}\n${err}")
endif()
if(NOT EXISTS "${SCRATCH}/run.ckpt")
  message(FATAL_ERROR "the first run wrote no checkpoint:\n${first}")
endif()
execute_process(COMMAND "${TRAIN_CNN}" --epochs 2 --resume ${common} RESULT_VARIABLE rc OUTPUT_VARIABLE second ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the resumed run failed (${rc}):\n${second}\n${err}")
endif()
foreach(expected "resumed from .*run.ckpt: 1 epochs done" "epoch  2/2  8 batches" "test accuracy")
  if(NOT second MATCHES "${expected}")
    message(FATAL_ERROR "the resumed run does not say '${expected}':\n${second}")
  endif()
endforeach()
if(second MATCHES "epoch  1/2")
  message(FATAL_ERROR "the resumed run trained the first epoch again:\n${second}")
endif()
# A checkpoint of another model is refused, and left as it was.
file(SHA256 "${SCRATCH}/run.ckpt" before)
execute_process(COMMAND "${TRAIN_CNN}" --epochs 3 --resume --width 0.5 ${common}
                RESULT_VARIABLE rc OUTPUT_VARIABLE third ERROR_VARIABLE err)
file(SHA256 "${SCRATCH}/run.ckpt" after)
if(rc EQUAL 0 OR NOT err MATCHES "is a checkpoint of \"${IDENTITY}" OR NOT before STREQUAL after)
  message(FATAL_ERROR "a checkpoint of another model was not refused (${rc}):\n${third}\n${err}")
endif()
file(REMOVE_RECURSE "${SCRATCH}")
