# example.train_cnn.json: --json FILE writes the run as JSON: one entry per
# epoch with its losses, accuracy, speed and wall time, and the model and
# policy it ran. Invoked with -DTRAIN_CNN=<binary> -DSCRATCH=<dir>.
file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}")
execute_process(COMMAND "${TRAIN_CNN}" --epochs 2 --train-limit 256 --test-limit 128 --batch 32
                        --json "${SCRATCH}/run.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "train_cnn --json failed (${rc}):\n${out}\n${err}")
endif()
file(READ "${SCRATCH}/run.json" run)
string(JSON epochs LENGTH "${run}" epochs)
if(NOT epochs EQUAL 2)
  message(FATAL_ERROR "--json holds ${epochs} epochs, not the 2 run:\n${run}")
endif()
string(JSON policy GET "${run}" policy)
string(JSON model GET "${run}" model)
if(NOT policy STREQUAL "auto" OR NOT model MATCHES "^resnet-18 width 0.25")
  message(FATAL_ERROR "--json names policy '${policy}' and model '${model}', not the run's:\n${run}")
endif()
string(JSON first_wall GET "${run}" epochs 0 wall_seconds_since_start)
string(JSON second_wall GET "${run}" epochs 1 wall_seconds_since_start)
string(JSON accuracy GET "${run}" epochs 1 test_accuracy)
if(NOT second_wall GREATER first_wall OR accuracy LESS 0 OR accuracy GREATER 1)
  message(FATAL_ERROR "--json's epochs are not in order, or the accuracy is not a fraction:\n${run}")
endif()
# The printed table and the JSON agree on the last epoch's accuracy.
string(SUBSTRING "${accuracy}" 0 5 accuracy_printed)
if(NOT out MATCHES "test accuracy ${accuracy_printed}")
  message(FATAL_ERROR "the JSON's accuracy ${accuracy} is not the printed one:\n${out}")
endif()
# A file it could not write is refused before any training, naming the flag.
execute_process(COMMAND "${TRAIN_CNN}" --iterations 1 --json "${SCRATCH}/missing/run.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "--json .*missing/run.json: its directory .* does not exist" OR out MATCHES "epoch")
  message(FATAL_ERROR "--json into a missing directory was not refused up front (${rc}):\n${out}\n${err}")
endif()
file(REMOVE_RECURSE "${SCRATCH}")
