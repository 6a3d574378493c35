"""check_lambda_helpers.py on nm listings written here (no CUDA build needed)."""
import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "check_lambda_helpers", pathlib.Path(__file__).with_name("check_lambda_helpers.py"))
clh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(clh)

ADAM = ("(anonymous namespace)::__nv_hdl_helper<__nv_dl_tag<void (*)(Kokkos::Cuda const&, unsigned long), "
        "&(void gmi::optim::adam_step<float>(Kokkos::Cuda const&, unsigned long)), 1u>, void, long>::fp_copier")
GAE = ("(anonymous namespace)::__nv_hdl_helper<__nv_dl_tag<void (*)(Kokkos::Cuda const&), "
       "&(void gmi::rl::gae(Kokkos::Cuda const&)), 1u>, void, int>::fp_copier")


def test_a_helper_listed_twice_is_reported():
    lines = [f"0000000002b08220 b {ADAM}", f"0000000002b08300 b {ADAM}", f"0000000002b08400 b {GAE}"]
    found = clh.duplicates(lines)
    assert len(found) == 1
    assert "adam_step<float>" in clh.enclosing_function(found[0])


def test_helpers_listed_once_pass():
    assert clh.duplicates([f"0000000002b08220 b {ADAM}", f"0000000002b08400 b {GAE}", "                 U cudaFree"]) == []


def test_other_members_of_a_helper_do_not_count():
    caller = ADAM.replace("fp_copier", "fp_caller")
    assert clh.duplicates([f"1 b {caller}", f"2 b {caller}", f"3 b {ADAM}"]) == []
